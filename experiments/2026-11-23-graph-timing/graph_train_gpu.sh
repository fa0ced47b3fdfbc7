#!/usr/bin/env bash
# Re-measures conv training pairs with CUDA-graph timing (docs/sweep.md "Timing"), time-boxed and
# resumable across calls. Each pair list bench/sweep/graph_NAME.txt.gz (experiments/2026-11-23-graph-timing/graph_train_pairs.py: every
# recorded kernel pair of some conv training problems, the problems in a seeded random order, so a partial
# file is a random subset) is swept in turn into $W/graph_NAME.csv.gz, continuing the records already in
# data/sweeps/h200-graph/NAME.csv.gz, where they are stored. No vendor rows (training does not read them).
#   graph_conv_train_short: bf16 problems with recorded best under 12 us
#   graph_conv_train_20us:  f16 problems under 20 us and bf16 problems from 12 to 20 us (its JIT alone
#                           takes more than one 575 s call on one H200: 230 problems a call; 660 of 939 done)
#   graph_newmodel_val:     the first 4 of the conv model trained on the graph labels (train --remeasured) for
#                           the held-out conv problems, less the pairs recheck_val.csv.gz holds (bench/model_pairs.py)
# HEAD_PROBLEMS=N sweeps only the pairs of each list's first N problems (a JIT that fits one call).
#   BUDGET_S=570 [LISTS="conv_train_short conv_train_20us"] [HEAD_PROBLEMS=N] bash experiments/2026-11-23-graph-timing/graph_train_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
for name in ${LISTS:-conv_train_short conv_train_20us}; do
  [ -f "data/sweeps/h200-graph/$name.csv.gz" ] && cp "data/sweeps/h200-graph/$name.csv.gz" "$W/graph_$name.csv.gz"
  pairs="bench/sweep/graph_$name.txt.gz"
  if [ -n "${HEAD_PROBLEMS:-}" ]; then
    zcat "$pairs" | awk -F'|' -v n="$HEAD_PROBLEMS" '$1 != last { last = $1; k++ } k <= n' >"$W/pairs_$name.txt"
    pairs="$W/pairs_$name.txt"
  fi
  timed_sweep "graph_$name" $(( $(left) - 10 )) --pairs "$pairs" --no-vendor
done
