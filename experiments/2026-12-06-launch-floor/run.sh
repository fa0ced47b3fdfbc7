#!/usr/bin/env bash
# Depthwise convolutions at batch 1 against cuDNN, next to the floor of a launch: trivial problems (a 1x1 image of 8
# channels, an 8x8x8 GEMM) timed the way the sweep times everything (CUDA graphs, cold L2), then every 2-D depthwise
# batch-1 layer of data/problems/conv_grouped_dw.txt with its best config of
# bench/results/2026-11-29-grouped-dw/v1-h200-baseline, cuDNN's rows in the same run; REPEAT passes (default 2).
# One device call (carry .deps .commit):
#   BUDGET_S=200 bash experiments/2026-12-06-launch-floor/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-launch-floor
source bench/gpu_session.sh
build_cli
copy_rate  # the other ceiling of these memory-bound layers
timed_sweep floor $(( $(left) - 20 )) --pairs "${PAIRS:-$HERE/pairs.txt}" --repeat "${REPEAT:-2}"
python3 bench/sm90_compare.py "$W/floor.csv.gz" --family all > "$W/compare.txt" 2>&1
grep -v '^replay' "$W/compare.txt" | cut -c1-150 | head -30
