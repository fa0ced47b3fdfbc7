#!/usr/bin/env bash
# auto under a vendor_first model (the GEMM models) on the device tool (carry .deps and .commit): the timed plans of
# experiments/2026-11-26-auto-vendor-first/gemm_long.txt as top_k -k 4 (ours and the vendor's, what auto timed before) and as auto (the
# vendor's algorithms alone), each with its own empty JIT cache; `tilepick run` of auto (outputs checked against
# the fp64 GPU reference, kernels timed with cold L2); `tilepick selftest dispatch`. Results: $OUT/results.tgz.
#   BUDGET_S=560 bash experiments/2026-11-26-auto-vendor-first/auto_vendor_first_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
L=experiments/2026-11-26-auto-vendor-first/gemm_long.txt
for s in top_k auto; do
  export TILEPICK_CACHE_DIR=/tmp/tp-jit-$s
  t0=$(date +%s.%N)
  timeout $(( $(left) - 300 )) $T plan -f $L --strategy $s -k 4 --json >"$W/plan_$s.json" 2>"$W/plan_$s.err"
  echo "plan $s rc=$? in $(python3 -c "import time; print(round(time.time() - $t0, 1))") s (empty JIT cache)"
done
for s in top_k auto; do
  export TILEPICK_CACHE_DIR=/tmp/tp-jit-$s
  timeout $(( $(left) - 200 )) $T run -f $L --strategy $s -k 4 >"$W/run_$s.txt" 2>&1
  echo "run $s rc=$? after $(( $(date +%s) - START )) s"
done
export TILEPICK_CACHE_DIR=/tmp/tp-jit
timeout $(( $(left) - 10 )) $T selftest dispatch >"$W/selftest.txt" 2>&1
echo "selftest rc=$? after $(( $(date +%s) - START )) s: $(grep -c PASS "$W/selftest.txt") PASS, $(grep -c FAIL "$W/selftest.txt") FAIL"
grep -E "FAIL|vendor alone" "$W/selftest.txt" | head -20
