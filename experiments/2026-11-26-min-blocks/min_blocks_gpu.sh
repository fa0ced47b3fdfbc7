#!/usr/bin/env bash
# Experiment (not shipped): does a minimum-blocks launch bound speed up sm80 kernels whose registers cost them the
# occupancy their shared memory allows? experiments/2026-11-26-min-blocks/min_blocks.patch makes codegen emit __launch_bounds__(threads, k),
# k = the CTAs per SM that shared memory allows, lowered until ptxas keeps the fp32 accumulators + 96 registers per
# thread. The pairs (bench/sweep/min_blocks_pairs.txt) are conv training problems' configs whose recorded register count
# exceeds that cap, each problem's fastest recorded config, and the held-out GEMM swizzle outlier. Both builds measure
# them on the same GPU, CUDA-graph timed as in data/sweeps/README.md, the patched build in between two baseline passes.
#   run: carry [".deps", ".commit"], command BUDGET_S=560 bash experiments/2026-11-26-min-blocks/min_blocks_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
base=$T
rm -rf /tmp/mb && mkdir -p /tmp/mb && tar cf - --exclude=./build-device --exclude=./build . | tar xf - -C /tmp/mb
( cd /tmp/mb && { git apply experiments/2026-11-26-min-blocks/min_blocks.patch 2>/dev/null || patch -p1 <experiments/2026-11-26-min-blocks/min_blocks.patch; } && ./scripts/device_build.sh ) \
  >"$W/build_mb.log" 2>&1 || { tail -20 "$W/build_mb.log"; exit 1; }
echo "patched build after $(( $(date +%s) - START )) s"
pairs=(--pairs bench/sweep/min_blocks_pairs.txt --no-vendor)
share=$(( ($(left) - 30) / 3 ))
T=$base timed_sweep base1 $share "${pairs[@]}"
T=/tmp/mb/build-device/tilepick timed_sweep min_blocks $share "${pairs[@]}"
T=$base timed_sweep base2 $(( $(left) - 15 )) "${pairs[@]}"
