#!/usr/bin/env bash
# What a race plan costs beside top_k with k=1 (which also times the vendor's other algorithms), on the device tool
# (carry .deps, .commit): experiments/2026-11-26-race/problems.txt planned three times in one JIT cache, 8 problems per process:
# race (cold JIT cache), top_k -k 1 (our kernels mostly compiled by then), race again (warm: the timing alone).
# Each pass's JSON in $W/<pass>/ (results.tgz); compare with experiments/2026-11-26-race/race_agreement.py --plans $W/<pass>.
#   BUDGET_S=560 bash experiments/2026-11-26-race/race_cost_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
PLAN_PROBLEMS=experiments/2026-11-26-race/problems.txt
build_all
for pass in race_cold:race top_k1:top_k race_warm:race; do
  name=${pass%%:*} strategy=${pass#*:}
  t0=$(date +%s)
  plan_chunks "$W/$name" --strategy "$strategy" -k 1 --vendor auto
  echo "$name: $(( $(date +%s) - t0 )) s, $(ls "$W/$name"/*.json | wc -l) chunks"
done
