#!/usr/bin/env bash
# Dispatch's auto strategy on the device tool (carry .deps and .commit): `tilepick selftest dispatch` (auto timed
# at threshold 0 and untimed at infinity included), auto plans of experiments/2026-11-26-auto-strategy/auto_problems.txt with a cold JIT
# cache (what each plan did, its seconds), then `tilepick run` of those problems with heuristic and auto (vendor auto,
# each output checked against the fp64 GPU reference, the kernel timed with cold L2). Results: $OUT/results.tgz.
#   BUDGET_S=560 bash experiments/2026-11-26-auto-strategy/auto_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
P=experiments/2026-11-26-auto-strategy/auto_problems.txt
timeout $(( $(left) - 300 )) $T selftest dispatch >"$W/selftest.txt" 2>&1
echo "selftest rc=$? after $(( $(date +%s) - START )) s: $(grep -c PASS "$W/selftest.txt") PASS, $(grep -c FAIL "$W/selftest.txt") FAIL"
grep "auto" "$W/selftest.txt" | head -20
t0=$(date +%s)
timeout $(( $(left) - 200 )) $T plan -f $P --strategy auto --json >"$W/plan_auto.json" 2>"$W/plan_auto.err"
echo "auto plans rc=$? in $(( $(date +%s) - t0 )) s (cold JIT cache)"
for s in heuristic auto; do
  timeout $(( $(left) - 20 )) $T run -f $P --strategy $s >"$W/run_$s.txt" 2>&1
  echo "run $s rc=$? after $(( $(date +%s) - START )) s"
done
