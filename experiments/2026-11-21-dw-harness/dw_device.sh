#!/usr/bin/env bash
# One device session for the depthwise family, from the repository root on the GPU machine:
# correctness of every direction on the check set and the timed layers (outputs poisoned, fp64
# reference), timings of the sampled configs, NVRTC compile times, and the cuDNN baseline.
# Carry build-dwdev (harness + precompiled cubins; experiments/2026-11-21-dw-harness/dw_build.sh and
# `dw_bench compile all build-dwdev/cubins` here) and .deps (to rebuild if the binary cannot run).
set -uo pipefail
export TILEPICK_DATA_DIR=data PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/dwout}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
B=build-dwdev/dw_bench
$B >/dev/null 2>&1
if [ $? -ne 1 ]; then echo "prebuilt harness does not run here; rebuilding"; experiments/2026-11-21-dw-harness/dw_build.sh 16 || exit 1; fi
$B run ${DW_JOBS:-all} build-dwdev/cubins "$OUT/dw_results.csv" 2>&1 | tee "$OUT/dw_bench.log" | grep -v "^NVRTC log"
mkdir -p /tmp/dw_fresh_cubins
DW_LIMIT=${DW_COMPILE_SAMPLE:-48} DW_THREADS=4 DW_VERBOSE=1 $B compile perf /tmp/dw_fresh_cubins 2>&1 | tail -3
python3 experiments/2026-11-21-dw-harness/dw_cudnn.py "$OUT/cudnn.csv" 2>&1 | tee "$OUT/cudnn.log"
