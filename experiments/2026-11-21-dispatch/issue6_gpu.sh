#!/usr/bin/env bash
# One GPU session behind bench/results/2026-11-21-h200-dispatch/: builds everything (CLI, Python
# module, C API, C example), then in order, each step with its own time limit:
#   1. tilepick selftest dispatch (GPUs 0 and 1)       2. experiments/2026-11-21-dispatch/dispatch_gpu.sh run firstcall (GPU 0)
#   3. the C example on a GPU; pytest of the Python package and tilepick.torch on a GPU
#   4. bench/torch_e2e.py per model (ResNet-50, Llama MLP, ConvNeXt-T)
#   5. the f16 validation sweep with what time is left (GPUs 1-3)
# Everything lands in $OUT/results.tgz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
python3 -c "import torch, torchvision; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'cudnn', torch.backends.cudnn.version(), 'torchvision', torchvision.__version__)" >"$W/versions.txt" 2>&1
OUT="$W/dispatch" SKIP_BUILD=1 timeout 90 experiments/2026-11-21-dispatch/dispatch_gpu.sh selftest run firstcall >"$W/dispatch.log" 2>&1
echo "dispatch rc=$? after $(( $(date +%s) - START )) s"
timeout 30 build-device/examples/example_plan_gemm >"$W/example_c.txt" 2>&1; echo "example_c rc=$?"
TILEPICK_CLI=$PWD/build-device/tilepick CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest -q -p no:cacheprovider \
  tests/python/test_torch_ops.py tests/python/test_dispatch_py.py >"$W/pytest.txt" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - START )) s"; tail -3 "$W/pytest.txt"
for m in resnet50 llama_mlp convnext_t; do
  t=$(( $(left) - 60 )); [ $t -gt 20 ] || break
  CUDA_VISIBLE_DEVICES=0 timeout $t python3 bench/torch_e2e.py --models $m --out "$W/e2e_$m" >"$W/e2e_$m.log" 2>&1
  echo "e2e $m rc=$? after $(( $(date +%s) - START )) s"
done
t=$(( $(left) - 15 ))
if [ $t -gt 40 ]; then
  OUT="$W/f16" SKIP_BUILD=1 F16_GPUS=1,2,3 F16_GEMM_S=$(( t * 2 / 5 )) F16_CONV_S=$(( t / 2 )) timeout $t experiments/2026-11-21-dispatch/dispatch_gpu.sh f16val >"$W/f16.log" 2>&1
  echo "f16 rc=$? after $(( $(date +%s) - START )) s"
fi
