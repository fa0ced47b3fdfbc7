#!/usr/bin/env bash
# Runs every example on a GPU (issue 6: the GPU parts of the examples are run and recorded).
# Output: $OUT/examples.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE_BUILD_ALL=1 ./scripts/device_build.sh >"$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
export TILEPICK_CACHE_DIR=/tmp/tp-jit PYTHONPATH="$PWD/python"
{
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "commit $(cat .commit 2>/dev/null || git rev-parse --short=12 HEAD)"
  for v in off auto; do
    echo "== TILEPICK_POLICY=auto:vendor=$v build-device/examples/example_dispatch_ops"
    TILEPICK_POLICY=auto:vendor=$v timeout 120 build-device/examples/example_dispatch_ops; echo "rc=$?"
  done
  echo "== build-device/examples/example_plan_gemm"; timeout 60 build-device/examples/example_plan_gemm; echo "rc=$?"
  echo "== examples/python/select_and_plan.py"; timeout 60 python3 examples/python/select_and_plan.py; echo "rc=$?"
  echo "== examples/python/capi_ctypes.py"
  TILEPICK_C_LIB=$PWD/build-device/libtilepick_c.so timeout 60 python3 examples/python/capi_ctypes.py; echo "rc=$?"
  echo "== examples/python/torch_swap_resnet.py --model resnet50 --batch 32"
  timeout 180 python3 examples/python/torch_swap_resnet.py --model resnet50 --batch 32; echo "rc=$?"
} >"$OUT/examples.txt" 2>&1
grep -E "^==|rc=|all ok|FAILED" "$OUT/examples.txt"
