#!/usr/bin/env bash
# One GPU session of active sampling (issue 5): measures the pairs of bench/sweep/model_pairs_*.txt.gz
# (bench/model_pairs.py: a model's top configs per problem, not yet recorded), the names given in order
# (default: conv_val conv_train gemm conv_f16 gemm_f16, the first round), each sweep time-boxed
# (compile + measure, an equal share of the time left) and resumable.
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
#   BUDGET_S=570 bash bench/model_pairs_gpu.sh [NAME...]
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
names=("$@")
[ $# -gt 0 ] || names=(conv_val conv_train gemm conv_f16 gemm_f16)
n=${#names[@]}
for i in "${!names[@]}"; do
  timed_sweep "model_pairs_${names[$i]}" $(( ($(left) - 10) / (n - i) )) --pairs "bench/sweep/model_pairs_${names[$i]}.txt.gz"
done
