#!/usr/bin/env bash
# One GPU session of dense conv data (issue 5): every legal config (no --sample) on the bf16 conv
# training problems, then on the bf16 conv validation problems, each list shuffled (seed 7) so that a
# time-boxed stop leaves a random subset of problems complete. Records: conv_train_full / conv_val_full.
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
#   BUDGET_S=570 TRAIN_SHARE=60 bash experiments/2026-11-22-conv-full/conv_full_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
for f in conv_train conv_val; do
  { grep '^#' data/problems/sweep/$f.txt; grep -v '^#' data/problems/sweep/$f.txt | shuf --random-source=<(yes 7); } >"$W/${f}_shuffled.txt"
done
timed_sweep conv_train_full $(( $(left) * ${TRAIN_SHARE:-60} / 100 )) -f "$W/conv_train_shuffled.txt"
timed_sweep conv_val_full $(( $(left) - 10 )) -f "$W/conv_val_shuffled.txt"
