#!/usr/bin/env bash
# fp8 block-scaled main loops side by side in one device call (carry .deps .commit .device-in):
#   1. the block check set x fixed configs (bench/sm90_gpu.sh step `block`: fp64 reference, poisoned outputs);
#   2. pairs.txt (or PAIRS, plain or .gz) under the working tree's kernels, with cuBLASLt's block-scaled rows;
#   3. the pairs matching TREE_GREP (default the 128x128 tiles) under each kernel tree of TREES (folders holding a
#      kernels/ tree), each with the vendor's rows;
#   ab.py's ratios against the working tree, and sm90_compare.py's table of it, in $OUT/results.tgz.
#   TREES=".device-in/old .device-in/single" BUDGET_S=540 bash experiments/2026-12-06-block-scale-loops/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-block-scale-loops PAIRS=${PAIRS:-$HERE/pairs.txt} TREE_GREP=${TREE_GREP:-tile=128x128x128}
if [ -z "${SKIP_VERIFY:-}" ]; then
  BUDGET_S=${VERIFY_S:-150} BLOCK_TIMEOUT=${BLOCK_TIMEOUT:-120} BLOCK_SAMPLED=0 STEPS=block bash bench/sm90_gpu.sh
  mv "$OUT/results.tgz" "$OUT/verify.tgz"
fi
source bench/gpu_session.sh
build_cli
trees=(${TREES:-}); zcat -f "$PAIRS" | grep -E "$TREE_GREP" > "$W/tree_pairs.txt"
n_head=$(zcat -f "$PAIRS" | wc -l) n_tree=$(wc -l < "$W/tree_pairs.txt")
# time shares by pair counts (each sweep needs > 40 s)
total=$(( n_head + ${#trees[@]} * n_tree )); avail=$(( $(left) - 40 * (${#trees[@]} + 1) ))
timed_sweep ab_head $(( 40 + avail * n_head / total )) --pairs "$PAIRS"; files=("$W/ab_head.csv.gz")
cp -r kernels "$W/head_kernels"
for t in "${trees[@]}"; do
  rm -rf kernels; cp -r "$t/kernels" kernels; build_cli
  timed_sweep "ab_$(basename "$t")" $(( 40 + avail * n_tree / total - 15 )) --pairs "$W/tree_pairs.txt"
  files+=("$W/ab_$(basename "$t").csv.gz")
done
rm -rf kernels; cp -r "$W/head_kernels" kernels; rm -rf "$W/head_kernels"
[ ${#files[@]} -gt 1 ] && { python3 experiments/2026-11-29-decode-regression/ab.py "${files[@]}" > "$W/ab.txt" 2>&1; cut -c1-220 "$W/ab.txt"; }
python3 bench/sm90_compare.py "$W/ab_head.csv.gz" > "$W/compare.txt" 2>&1; grep -v '^replay' "$W/compare.txt" | cut -c1-200
