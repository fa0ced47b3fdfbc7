#!/usr/bin/env bash
# One GPU session of a later conv training sweep (issue 5): data/problems/sweep/NAME.txt (default
# conv_train_more, conv_train_more2, conv_train_more3: the later training budgets; conv_train_nets2: the
# later training networks; bf16), 40 sampled configs per
# problem as conv_train.csv.gz was measured (data/sweeps/README.md) but without the vendor rows
# (training does not read them). Time-boxed and
# resumable: pass the returned NAME.csv.gz back as $RESUME to continue. Run it on a 4x or 2x
# host only (data/sweeps/README.md: the 1x host times short kernels differently). PAIRS: names of
# bench/sweep/model_pairs_*.txt.gz (a model's top configs on these problems) to measure after, in PAIRS_S
# seconds (default 100) kept from the budget. SAMPLE: configs per problem (default 40; the GEMM subset
# gemm_train_more was swept with 48).
#   BUDGET_S=570 [RESUME=path.csv.gz] [PAIRS="NAME..."] [PAIRS_S=100] [SAMPLE=40] bash bench/conv_more_gpu.sh [NAME]
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
name=${1:-conv_train_more}
build_cli
[ -z "${RESUME:-}" ] || cp "$RESUME" "$W/$name.csv.gz"
keep=0; [ -z "${PAIRS:-}" ] || keep=${PAIRS_S:-100}
timed_sweep "$name" $(( $(left) - 10 - keep )) -f "data/problems/sweep/$name.txt" --sample ${SAMPLE:-40} --seed 1 --no-vendor
for p in ${PAIRS:-}; do
  timed_sweep "model_pairs_$p" $(( $(left) - 10 )) --pairs "bench/sweep/model_pairs_$p.txt.gz" --no-vendor
done
