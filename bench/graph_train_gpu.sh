#!/usr/bin/env bash
# Re-measures conv training pairs with CUDA-graph timing (docs/sweep.md "Timing"), time-boxed and
# resumable across calls: bench/sweep/graph_conv_train_short.txt.gz lists every recorded kernel pair of
# the bf16 conv training problems (the shipped models' files) whose recorded best is under 12 us, the
# problems in a seeded random order, so a partial file is a random subset. No vendor rows (training
# does not read them); stored as data/sweeps/h200-graph/conv_train_short.csv.gz. RESUME=FILE continues an
# earlier call's records.
#   BUDGET_S=570 [RESUME=data/sweeps/h200-graph/conv_train_short.csv.gz] bash bench/graph_train_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
[ -n "${RESUME:-}" ] && cp "$RESUME" "$W/graph_conv_train_short.csv.gz"
timed_sweep graph_conv_train_short $(( $(left) - 10 )) --pairs bench/sweep/graph_conv_train_short.txt.gz --no-vendor
