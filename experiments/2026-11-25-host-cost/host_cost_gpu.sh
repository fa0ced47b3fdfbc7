#!/usr/bin/env bash
# Host-time probes on the device tool: bench_plan_run_host (Plan::run in C++, taken apart),
# experiments/2026-11-25-host-cost/torch_host_breakdown.py (one tilepick.torch conv call taken apart, in a torch process) and, with
# CUDNN_PROBE=1, experiments/2026-11-25-host-cost/cudnn_host_cost.cpp (cuDNN's legacy vs graph API per call). Results: $OUT/results.tgz.
#   BUDGET_S=300 [CUDNN_PROBE=0] bash experiments/2026-11-25-host-cost/host_cost_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
cmake --build build-device -j "$(nproc)" --target bench_plan_run_host >>"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
for g in on off; do  # TILEPICK_CUDNN_GRAPH: cuDNN's graph API path, then the legacy one
  TILEPICK_CUDNN_GRAPH=$g build-device/bench/bench_plan_run_host 2>&1 | sed "s/^/graph $g: /" | tee -a "$W/plan_run_host.txt"
done
if [ "${CUDNN_PROBE:-0}" = 1 ]; then
  lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))")
  inc=.deps/include/cudnn9; [ -f $inc/cudnn.h ] || inc=/usr/local/cuda/include
  g++ -O2 -std=c++20 -I$inc -I/usr/local/cuda/include experiments/2026-11-25-host-cost/cudnn_host_cost.cpp "$lib/libcudnn.so.9" -L/usr/local/cuda/lib64 \
    -lcudart -Wl,-rpath,"$lib" -o /tmp/cudnn_host_cost && /tmp/cudnn_host_cost 2>&1 | tee "$W/cudnn_host_cost.txt"
fi
timeout $(( $(left) - 10 )) python3 experiments/2026-11-25-host-cost/torch_host_breakdown.py 2>&1 | tee "$W/torch_host_breakdown.txt" | head -40
echo "after $(( $(date +%s) - START )) s"
