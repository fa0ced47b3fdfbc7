#!/usr/bin/env bash
# Stream-K for the last partial wave with wide tiles (128 accumulators a consumer thread), one device call (carry
# .deps .commit): the check set x three wide stream-K configs against the fp64 reference, compute-sanitizer on
# small problems (every tile split), then pairs.txt timed REPEAT times (default 3) in later passes with cuBLASLt's rows.
#   BUDGET_S=540 bash experiments/2026-12-06-wide-stream-k/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-wide-stream-k
source bench/gpu_session.sh
build_cli
SK=("fam=sm90 tile=128x256x64 warps=2x1 stages=4 splitk=2 skmode=serial swz=8 epi=smem"
    "fam=sm90 tile=256x128x64 warps=2x1 stages=4 splitk=4 skmode=serial epi=direct"
    "fam=sm90 tile=128x192x64 warps=2x1 stages=4 splitk=3 skmode=serial swz=8 epi=smem")
sel=(); for c in "${SK[@]}"; do sel+=(-c "$c"); done
timeout 150 $T verify -f data/problems/sm90_check.txt "${sel[@]}" --csv "$W/verify_sk.csv" >"$W/verify_sk.txt" 2>&1
echo "verify wide stream-K rc=$?: $(tail -1 "$W/verify_sk.txt")"; grep -A2 '^FAIL' "$W/verify_sk.txt" | head -20
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $T verify -c "${SK[0]}" -c "${SK[1]}" \
    -p 'gemm rcr m131 n232 k2000 bf16 ep=bias+relu' -p 'gemm rcr batch3 m300 n520 k960 f16 beta=0.5' >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY' "$W/$tool.txt")"
done
timed_sweep perf $(( $(left) - 30 )) --pairs "${PAIRS:-$HERE/pairs.txt}" --repeat "${REPEAT:-3}"
python3 bench/sm90_compare.py "$W/perf.csv.gz" > "$W/compare.txt" 2>&1; grep -v '^replay' "$W/compare.txt" | cut -c1-150 | head -30
