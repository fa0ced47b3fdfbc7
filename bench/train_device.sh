#!/usr/bin/env bash
# Retrains the shipped models on the lent machine's CPU cores (issue 5): 40 min on the 2-core dev VM.
# GEMM and pooled conv train side by side (half the cores each) on the data files their shipped
# manifest.json names (a conv problem re-measured with CUDA graphs, data/sweeps/h200-graph/, keeps only
# those records), validated on the manifest's validation files; then the fast students are re-distilled.
# The new models/ folder (students, manifests, logs) lands in $OUT/results.tgz, the teachers in
# $OUT/<op>_model.txt.gz (pooled conv: conv_model.txt.gz); copy them over models/ here.
# LightGBM travels as a wheel (the image has none):
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 -d .whl lightgbm==4.7.0
#   run: carry [".deps", ".whl", ".commit"], command BUDGET_S=580 bash bench/train_device.sh
# Conv trains with the shipped conv model's recipe, read from its manifest (objective, patience, bag) unless CONV_ARGS
# is set (then those options instead, e.g. "--objectives lambdarank --no-pool-conv"). Experiments: GEMM=0 (conv only),
# ALL_DATA=1 (every data/sweeps/h200/*_train* file and data/sweeps/h200-graph/conv_train_*, not the manifests').
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
setup_training
cp -r models "$W/models"
half=$(( $(nproc) / 2 )); [ "${GEMM:-1}" = 0 ] && half=$(nproc)
if [ "${ALL_DATA:-0}" = 1 ]; then
  gemm=("${TRAIN[@]}" --val "${VAL[@]}"); conv=("${TRAIN[@]}" --remeasured "${REMEASURED[@]}" --val "${VAL[@]}")
else
  gemm=($(manifest_files gemm_half_h200 data) --val $(manifest_files gemm_half_h200 validation_files))
  conv=($(manifest_files conv_fwd_half_h200 data plain) --remeasured $(manifest_files conv_fwd_half_h200 data graph)
        --val $(manifest_files conv_fwd_half_h200 validation_files))
fi
common=(--problems-file data/problems/sweep/*.txt --out "$W/models" --threads "$half")
{ echo "commit $(cat .commit 2>/dev/null); $(nproc) cores"; echo "gemm: ${gemm[*]}"; echo "conv: ${conv[*]}"; } | tee "$W/train_command.txt"
t=$(( $(left) - 100 ))
[ "${GEMM:-1}" = 0 ] || timeout $t python3 -m tilepick.train "${gemm[@]}" "${common[@]}" --only gemm_half_h200 >"$W/train_gemm.log" 2>&1 &
timeout $t python3 -m tilepick.train "${conv[@]}" "${common[@]}" ${CONV_ARGS-$(manifest_recipe conv_fwd_half_h200)} --only conv_fwd_half_h200 conv_bwd_data_half_h200 \
  conv_bwd_weight_half_h200 >"$W/train_conv.log" 2>&1 &
wait
echo "trained after $(( $(date +%s) - START )) s"; tail -n 3 "$W"/train_*.log
timeout $(( $(left) - 10 )) python3 -m tilepick.distill --models "$W/models" --only $([ "${GEMM:-1}" = 0 ] || echo gemm_half_h200) conv_fwd_half_h200 conv_bwd_data_half_h200 conv_bwd_weight_half_h200 --threads "$(nproc)" >"$W/distill.log" 2>&1
echo "distilled rc=$? after $(( $(date +%s) - START )) s"; tail -n 8 "$W/distill.log"
# The teachers travel as their own files (one file back is at most 16 MiB).
m="$W/models"
for d in "$m"/*/; do n=$(basename "$d"); [ -f "$d/model.txt.gz" ] && mv "$d/model.txt.gz" "$OUT/${n%_half_h200}_model.txt.gz"; done
[ -f "$m/conv_half_h200.model.txt.gz" ] && mv "$m/conv_half_h200.model.txt.gz" "$OUT/conv_model.txt.gz"
