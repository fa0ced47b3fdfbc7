#!/usr/bin/env bash
# One GPU session of a later conv training sweep (issue 5): data/problems/sweep/NAME.txt (default
# conv_train_more, conv_train_more2, conv_train_more3: the later training budgets; conv_train_nets2: the
# later training networks; bf16), 40 sampled configs per
# problem as conv_train.csv.gz was measured (data/sweeps/README.md) but without the vendor rows
# (training does not read them). Time-boxed and
# resumable: pass the returned NAME.csv.gz back as $RESUME to continue. The files of data/sweeps/h200/ were
# timed one launch at a time on a 4x host (data/sweeps/README.md: a 1x host timed short kernels differently
# that way); the sweep now times CUDA graphs by default, as the 1x-H200 files of data/sweeps/h200-graph/ were
# (conv_train_video: SAMPLE=20, 1x H200). PAIRS: names of
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
