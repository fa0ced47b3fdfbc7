#!/usr/bin/env bash
# bf16 / f16 squares: where the cooperative 128x256 kernel loses its last percent (one device call, carry .deps .commit
# .device-in): Nsight Compute of ours (per-SASS-instruction stall samples) and of cuBLASLt at 4096^3 bf16, then
# pairs.txt timed REPEAT times (default 5) in later passes, with cuBLASLt's rows in each pass.
#   BUDGET_S=540 bash experiments/2026-12-06-square-epilogue/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-square-epilogue
if [ -z "${SKIP_NCU:-}" ]; then
  BUDGET_S=230 NCU_CONFIG="${NCU_CONFIG:-$(head -1 $HERE/pairs.txt | cut -d'|' -f2)}" STEPS=ncu bash bench/sm90_gpu.sh
  mv "$OUT/results.tgz" "$OUT/ncu.tgz"
fi
source bench/gpu_session.sh
build_cli
trees=(${TREES:-})
timed_sweep rep_head $(( ($(left) - 30) / (1 + ${#trees[@]}) )) --pairs "${PAIRS:-$HERE/pairs.txt}" --repeat "${REPEAT:-5}"
files=("$W/rep_head.csv.gz")
cp -r kernels "$W/head_kernels"
for t in "${trees[@]}"; do
  rm -rf kernels; cp -r "$t/kernels" kernels; find kernels -type f -exec touch {} +; build_cli
  timed_sweep "rep_$(basename "$t")" $(( ($(left) - 30) / (1 + ${#trees[@]}) )) --pairs "${PAIRS:-$HERE/pairs.txt}" --repeat "${REPEAT:-5}"
  files+=("$W/rep_$(basename "$t").csv.gz")
done
rm -rf kernels; cp -r "$W/head_kernels" kernels; rm -rf "$W/head_kernels"
for f in "${files[@]}"; do python3 bench/sm90_compare.py "$f" > "${f%.csv.gz}_compare.txt" 2>&1; grep -v '^replay' "${f%.csv.gz}_compare.txt" | cut -c1-140 | head -20; done
