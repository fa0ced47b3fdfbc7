#!/usr/bin/env bash
# Host-time probes on the device tool: bench/cudnn_host_cost.cpp (cuDNN legacy vs backend API per call) and
# bench/torch_host_breakdown.py (one tilepick.torch conv call taken apart). Results: $OUT/results.tgz.
#   BUDGET_S=300 bash bench/host_cost_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_all
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
lib=$(python3 -c "import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], 'lib'))")
inc=.deps/include/cudnn9; [ -f $inc/cudnn.h ] || inc=/usr/local/cuda/include
g++ -O2 -std=c++20 -I$inc -I/usr/local/cuda/include bench/cudnn_host_cost.cpp "$lib/libcudnn.so.9" -L/usr/local/cuda/lib64 \
  -lcudart -Wl,-rpath,"$lib" -o /tmp/cudnn_host_cost && /tmp/cudnn_host_cost 2>&1 | tee "$W/cudnn_host_cost.txt"
timeout $(( $(left) - 10 )) python3 bench/torch_host_breakdown.py 2>&1 | tee "$W/torch_host_breakdown.txt" | head -60
echo "after $(( $(date +%s) - START )) s"
