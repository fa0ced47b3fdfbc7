#!/usr/bin/env bash
# The decode regression's bisect in one device call: the pairs of pairs.txt (or PAIRS) under the working tree's
# kernels, then under each kernel tree of TREES (folders holding a kernels/ tree, made with
# `git archive COMMIT kernels | tar -x -C .device-in/COMMIT`; carry .deps .commit .device-in), each sweep with the
# vendor's rows, the time split evenly; ab.py's ratios in $OUT/results.tgz:ab.txt.
#   TREES=".device-in/38dd8ac .device-in/d60c8b4 .device-in/d768c5a" BUDGET_S=300 bash experiments/2026-11-29-decode-regression/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
HERE=experiments/2026-11-29-decode-regression PAIRS=${PAIRS:-$HERE/pairs.txt}
build_cli
cp -r kernels "$W/head_kernels"; trees=(${TREES:?set TREES}); share=$(( ($(left) - 10) / (${#trees[@]} + 1) ))
timed_sweep ab_head $share --pairs "$PAIRS"; files=("$W/ab_head.csv.gz")
for t in "${trees[@]}"; do
  rm -rf kernels; cp -r "$t/kernels" kernels; build_cli
  timed_sweep "ab_$(basename "$t")" $share --pairs "$PAIRS"; files+=("$W/ab_$(basename "$t").csv.gz")
done
rm -rf kernels; cp -r "$W/head_kernels" kernels; rm -rf "$W/head_kernels"
python3 $HERE/ab.py "${files[@]}" > "$W/ab.txt" 2>&1; cut -c1-200 "$W/ab.txt"
