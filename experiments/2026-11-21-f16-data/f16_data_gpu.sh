#!/usr/bin/env bash
# One GPU session of data collection (issue 5), each sweep time-boxed and resumable:
#   1. the search proposals (bench/sweep/search_proposals_gemm_val.txt.gz: tilepick search --warm 8 --top 8
#      on the GEMM validation problems, plus the model's best pool config per problem)
#   2. f16 conv training problems (data/problems/sweep/conv_train.txt in f16), 40 sampled configs
#   3. f16 conv validation problems, 40 sampled configs
#   4. the rest of the f16 GEMM validation sweep (resumes data/sweeps/h200/gemm_val_f16.csv.gz)
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
for f in conv_train conv_val; do sed -E 's/\bbf16\b/f16/g' data/problems/sweep/$f.txt >"$W/${f}_f16.txt"; done
timed_sweep search_proposals 100 --pairs bench/sweep/search_proposals_gemm_val.txt.gz
timed_sweep conv_train_f16 $(( $(left) * 60 / 100 )) -f "$W/conv_train_f16.txt" --sample 40
timed_sweep conv_val_f16 $(( $(left) - 90 )) -f "$W/conv_val_f16.txt" --sample 40
cp data/sweeps/h200/gemm_val_f16.csv.gz "$W/gemm_val_f16.csv.gz"
timed_sweep gemm_val_f16 $(( $(left) - 10 )) -f data/problems/sweep/gemm_val_f16.txt --sample 96
