#!/usr/bin/env bash
# GPU check after the libstdc++ fix and the eager path of tilepick.torch (issue 6): builds everything,
# runs the dispatcher self-test, the Python / torch / ctypes tests, and tilepick.torch end to end
# (ResNet-50, Llama MLP, ConvNeXt-T; steady state and host time per call). Results: $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv >"$W/nvidia-smi.csv"
ldd python/tilepick/_core*.so build-device/libtilepick_c.so | grep -E "^[^ \t]|stdc" >"$W/ldd.txt"
timeout 90 build-device/tilepick selftest dispatch >"$W/selftest.txt" 2>&1; echo "selftest rc=$?: $(tail -1 "$W/selftest.txt")"
TILEPICK_CLI=$PWD/build-device/tilepick TILEPICK_C_LIB=$PWD/build-device/libtilepick_c.so timeout 200 \
  python3 -m pytest -q -rs -p no:cacheprovider tests/python/test_torch_ops.py tests/python/test_dispatch_py.py \
  tests/python/test_capi_ctypes.py >"$W/pytest.txt" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/pytest.txt")"
for m in resnet50 llama_mlp convnext_t; do
  t=$(( $(left) - 20 )); [ $t -gt 30 ] || break
  timeout $t python3 bench/torch_e2e.py --models $m --no-first-call --out "$W/e2e_$m" >"$W/e2e_$m.log" 2>&1
  echo "e2e $m rc=$? after $(( $(date +%s) - START )) s"; grep -E "host time|x[0-9]" "$W/e2e_$m.log" | tail -12
done
