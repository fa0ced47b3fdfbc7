#!/usr/bin/env bash
# Does the held-out GEMM outlier repeat? `gemm rcr m192 n16384 k4096 ... tile=64x128x64 swz=8` read 104.7 us against
# 77.9 us with swz=1 in data/sweeps/h200-graph/gemm_lr_val.csv.gz. bench/sweep/swizzle_check.txt holds that problem
# with and without its epilogue, three tiles at swz 1 and 8, and the worst held-out GEMM pick (rrr m512 n2560 k7680)
# beside the fastest configs recorded for it; each pair is measured three times (--repeat 3, later passes), CUDA-graph
# timed as in data/sweeps/README.md. Records and log in $OUT/results.tgz.
#   BUDGET_S=400 bash experiments/2026-11-26-swizzle-check/swizzle_check_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
timed_sweep swizzle_check $(( $(left) - 10 )) --pairs bench/sweep/swizzle_check.txt --repeat 3
zcat "$W/swizzle_check.csv.gz" | grep -v '^#' | awk -F, 'NR > 1 { printf "%-52s %-110s %-6s %9.2f\n", $1, $2, $3, $4 }'
