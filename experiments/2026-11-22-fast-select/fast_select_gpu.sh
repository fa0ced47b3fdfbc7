#!/usr/bin/env bash
# GPU check of the fast selection path (issue 5) with the shipped models: builds everything, runs the
# dispatcher self-test, the Python / torch / ctypes tests, the C++ dispatch example, and ResNet-50
# through tilepick.torch, all with the default TILEPICK_SELECT (fast). Results: $OUT/results.tgz.
#   BUDGET_S=420 bash experiments/2026-11-22-fast-select/fast_select_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$W/nvidia-smi.csv"
timeout 120 build-device/tilepick selftest dispatch >"$W/selftest.txt" 2>&1; echo "selftest rc=$?: $(tail -1 "$W/selftest.txt")"
timeout 60 build-device/examples/example_dispatch_ops >"$W/dispatch_ops.txt" 2>&1; echo "dispatch_ops rc=$?: $(tail -1 "$W/dispatch_ops.txt")"
TILEPICK_CLI=$PWD/build-device/tilepick TILEPICK_C_LIB=$PWD/build-device/libtilepick_c.so timeout 200 \
  python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_torch_ops.py tests/python/test_dispatch_py.py \
  tests/python/test_capi_ctypes.py >"$W/pytest.txt" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/pytest.txt")"
t=$(( $(left) - 20 ))
if [ $t -gt 40 ]; then
  timeout $t python3 bench/torch_e2e.py --models resnet50 --modes torch,tilepick_heuristic --out "$W/e2e_resnet50" >"$W/e2e_resnet50.log" 2>&1
  echo "e2e resnet50 rc=$? after $(( $(date +%s) - START )) s"; tail -12 "$W/e2e_resnet50.log"
fi
