#!/usr/bin/env bash
# Grouped-CV comparison of conv training variants on the lent machine's cores (issue 5): each variant
# (NAME:TRAIN_OPTIONS, ';'-separated in VARIANTS) trains the pooled conv model on every *_train* record
# file with its share of the cores; CV and held-out logs in $OUT/results.tgz, each teacher in
# $OUT/<name>_conv_model.txt.gz. Carry [".deps", ".whl", ".commit"] (LightGBM wheel: bench/train_device.sh).
#   VARIANTS="base:;clip:--clip 0.69" BUDGET_S=560 bash experiments/2026-11-22-conv-variants/train_variants_device.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
setup_training
IFS=';' read -ra variants <<<"${VARIANTS:?VARIANTS=name:options;...}"
threads=$(( $(nproc) / ${#variants[@]} )); [ $threads -ge 1 ] || threads=1
echo "commit $(cat .commit 2>/dev/null); $(nproc) cores, $threads per variant; train: ${TRAIN[*]}" | tee "$W/train_command.txt"
t=$(( $(left) - 30 ))
for v in "${variants[@]}"; do
  name=${v%%:*}; opts=${v#*:}
  # shellcheck disable=SC2086  # the options split into words
  timeout $t python3 -m tilepick.train "${TRAIN[@]}" --val "${VAL[@]}" --problems-file data/problems/sweep/*.txt \
    --out "$W/$name" --threads $threads $opts --only conv_fwd_half_h200 conv_bwd_data_half_h200 \
    conv_bwd_weight_half_h200 >"$W/$name.log" 2>&1 &
done
wait
echo "trained after $(( $(date +%s) - START )) s"
for v in "${variants[@]}"; do
  name=${v%%:*}; echo "== $name (${v#*:})"; grep -E "CV|held-out" "$W/$name.log" | cut -c1-160
  [ -f "$W/$name/conv_half_h200.model.txt.gz" ] && mv "$W/$name/conv_half_h200.model.txt.gz" "$OUT/${name}_conv_model.txt.gz"
done
