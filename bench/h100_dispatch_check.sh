#!/usr/bin/env bash
# On an H100 SXM: the dispatcher's live-device path selects with the H200 models that serve h100_sxm (plan
# source model:*_h200, not the fallback) and, for tf32 GEMMs, with the model trained on H100 records
# (model:gemm_tf32_h100_sxm), runs and checks against the fp64 reference, and the dispatcher
# selftest passes. Output in $OUT/dispatch_check.txt. Needs build-device/tilepick (bench/h100_transfer_gpu.sh
# builds it) or builds it.
#   bash bench/h100_dispatch_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
[ -x build-device/tilepick ] || ./scripts/device_build.sh >/dev/null 2>&1 || { echo "build failed"; exit 1; }
T=build-device/tilepick
export TILEPICK_CACHE_DIR=/tmp/tp-jit
P=(-p "gemm rcr m4096 n4096 k4096 bf16" -p "gemm rcr m16 n4096 k11008 bf16"
   -p "fwd g1 mb32 ic256 ih56 iw56 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
   -p "bwd_data g32 mb16 ic512 ih28 iw28 oc512 kh3 kw3 sh1 sw1 ph1 pw1 f16"
   -p "bwd_weight g1 mb8 ic64 id8 ih28 iw28 oc64 kd3 kh3 kw3 sd1 sh1 sw1 pd1 ph1 pw1 bf16"
   -p "fwd g96 mb32 ic96 ih56 iw56 oc96 kh7 kw7 sh1 sw1 ph3 pw3 bf16"
   -p "gemm rcr m4096 n4096 k4096 f32" -p "gemm crr m777 n3001 k1029 f32")
{
  nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv
  echo "== arch show --device 0"; $T arch show --device 0
  echo "== plan (heuristic)"; $T plan "${P[@]}"
  echo "== run (heuristic, vendor side by side)"; $T run "${P[@]}"
  echo "== run (top_k, k = 4)"; $T run "${P[@]}" --strategy top_k --no-vendor
  echo "== selftest dispatch"; $T selftest dispatch
} >"$OUT/dispatch_check.txt" 2>&1
echo "dispatch check rc=$? ($(grep -c 'model:' "$OUT/dispatch_check.txt") lines name a model)"
