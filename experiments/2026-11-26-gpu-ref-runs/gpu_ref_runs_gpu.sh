#!/usr/bin/env bash
# The GPU reference's bwd_weight in runs (kernels/ref/conv_ref.cuh) on the device tool (carry .deps, .commit and
# build/old_ref.tgz: the files of the one-thread-per-output version, `git show BASE:path` of kernels/ref/conv_ref.cuh,
# kernels/ref/params.cuh, src/ref/gpu_ref.{cpp,hpp}, tools/cmd_selftest.cpp): `tilepick selftest gpu-ref` against the
# CPU fp64 reference on odd-sized problems (runs and one run, every direction), then the reference's time on large
# bwd_weight layers, old and new built side by side. Results: $OUT/results.tgz.
#   BUDGET_S=560 bash experiments/2026-11-26-gpu-ref-runs/gpu_ref_runs_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
if [ -f build/old_ref.tgz ]; then
  rm -rf /tmp/old && mkdir -p /tmp/old && tar cf - --exclude=./build --exclude=./build-device . | tar xf - -C /tmp/old &&
    tar xzf build/old_ref.tgz -C /tmp/old && (cd /tmp/old && ./scripts/device_build.sh >"$W/build_old.log" 2>&1) &&
    echo "old built after $(( $(date +%s) - START )) s"
fi
check=(-p "bwd_weight g1 mb5 ic3 ih61 iw59 oc5 kh3 kw3 sh2 sw1 ph1 pw0 bf16"
       -p "bwd_weight g1 mb8 ic3 ih112 iw112 oc32 kh7 kw7 sh2 sw2 ph3 pw3 bf16"
       -p "bwd_weight g1 mb2 ic3 id8 ih56 iw56 oc45 kd1 kh7 kw7 sd1 sh2 sw2 pd0 ph3 pw3 bf16"
       -p "bwd_weight g4 mb16 ic16 ih40 iw40 oc16 kh3 kw3 sh1 sw1 ph1 pw1 f16"
       -p "bwd_weight g1 mb3 ic7 ih33 iw35 oc9 kh5 kw3 sh1 sw2 ph2 pw1 dh2 dw1 f32"
       -p "bwd_weight g1 mb2 ic64 ih14 iw14 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
       -p "fwd g1 mb3 ic5 ih17 iw19 oc7 kh3 kw3 sh2 sw1 ph1 pw1 bf16 ep=bias+relu"
       -p "bwd_data g2 mb2 ic6 id5 ih9 iw7 oc10 kd3 kh3 kw3 sd1 sh2 sw1 pd1 ph1 pw1 f16"
       -p "gemm rcr m33 n65 k1000 bf16")
timeout $(( $(left) - 200 )) $T selftest gpu-ref "${check[@]}" --cpu-flops 1e10 --no-bench >"$W/check.txt" 2>&1
echo "check rc=$?: $(tail -1 "$W/check.txt")"
bench=(--bench "bwd_weight g1 mb128 ic3 ih520 iw520 oc64 kh7 kw7 sh2 sw2 ph3 pw3 bf16"
       --bench "bwd_weight g1 mb16 ic3 id16 ih112 iw112 oc45 kd1 kh7 kw7 sd1 sh2 sw2 pd0 ph3 pw3 bf16"
       --bench "bwd_weight g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
       --bench "bwd_weight g1 mb16 ic256 id4 ih14 iw14 oc460 kd1 kh3 kw3 sd1 sh1 sw1 pd0 ph1 pw1 bf16"
       --bench "fwd g1 mb128 ic64 ih56 iw56 oc64 kh3 kw3 sh1 sw1 ph1 pw1 bf16")
for v in new old; do
  bin=$T; [ $v = old ] && bin=/tmp/old/build-device/tilepick
  [ -x "$bin" ] || continue
  timeout $(( $(left) - 10 )) $bin selftest gpu-ref -p "gemm rcr m8 n8 k8 bf16" "${bench[@]}" >"$W/bench_$v.txt" 2>&1
  echo "bench $v rc=$?"; grep "^bench" "$W/bench_$v.txt"
done
