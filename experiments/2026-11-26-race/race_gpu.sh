#!/usr/bin/env bash
# Dispatch's race strategy on the device tool (carry .deps and .commit): `tilepick selftest dispatch` (race
# included), the torch ops' tests, race plans of experiments/2026-11-26-race/problems.txt (held-out problems; each plan's
# candidates carry both timings, compared with the records by experiments/2026-11-26-race/race_agreement.py), and the step profile
# with torch, auto and race (bench/torch_profile.py). Results: $OUT/results.tgz.
#   BUDGET_S=560 [MODELS=resnet50,convnext_t] [PLANS_ONLY=1: selftest and race plans only] bash experiments/2026-11-26-race/race_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
PLAN_PROBLEMS=experiments/2026-11-26-race/problems.txt
build_all
$T selftest dispatch >"$W/selftest.txt" 2>&1
echo "selftest rc=$? after $(( $(date +%s) - START )) s: $(grep -c PASS "$W/selftest.txt") PASS, $(grep -c FAIL "$W/selftest.txt") FAIL"
grep -i "race" "$W/selftest.txt" | head -20
t0=$(date +%s)
FLOOR=210 plan_chunks "$W/race" --strategy race --vendor auto
echo "race plans in $(( $(date +%s) - t0 )) s (cold JIT cache): $(ls "$W"/race/*.json | wc -l) chunks"
[ -n "${PLANS_ONLY:-}" ] && exit 0
timeout $(( $(left) - 150 )) python3 -m pytest -q -p no:cacheprovider tests/python/test_torch_ops.py >"$W/pytest.log" 2>&1
echo "pytest rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/pytest.log")"
timeout $(( $(left) - 10 )) python3 bench/torch_profile.py --out "$W/profile" --models "${MODELS:-resnet50,convnext_t}" \
  --modes torch,auto,race --profiled 1 >"$W/profile.log" 2>&1
echo "profile rc=$? after $(( $(date +%s) - START )) s"; sed -n '/^| model/,/^$/p' "$W/profile/profile.md" 2>/dev/null
