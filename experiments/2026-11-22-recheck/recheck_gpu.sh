#!/usr/bin/env bash
# One GPU session of the same-run recheck of the held-out eval (issue 5, docs/history.md "The misses are real: a same-run recheck"):
# measures bench/sweep/recheck_val{,_f16}.txt.gz (bench/recheck_pairs.py) three times each, passes interleaved
# per problem on one worker, each sweep time-boxed and resumable. Everything lands in $OUT/results.tgz.
#   BUDGET_S=570 bash experiments/2026-11-22-recheck/recheck_gpu.sh [NAME...]    (default: recheck_val recheck_val_f16)
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
names=("$@")
[ $# -gt 0 ] || names=(recheck_val recheck_val_f16)
n=${#names[@]}
for i in "${!names[@]}"; do
  timed_sweep "${names[$i]}" $(( ($(left) - 10) / (n - i) )) --pairs "bench/sweep/${names[$i]}.txt.gz" --repeat 3
done
