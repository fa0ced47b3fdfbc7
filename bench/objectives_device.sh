#!/usr/bin/env bash
# The three training objectives compared by grouped CV on the same folds for the shipped models (issue 5), on the
# lent machine's CPU cores: `python -m tilepick.train --compare-only` with each shipped model's data files and recipe
# (bag, patience; from its manifest.json), GEMM and pooled conv side by side, every CV booster of a unit at once
# (--jobs). Their boosters stay; the manifests with "cv" and "cv_compared" land in $OUT/results.tgz (models/).
# LightGBM travels as a wheel (bench/train_device.sh says how to get it):
#   run: carry [".deps", ".whl", ".commit"], a many-core kind (nvidia-h100-x4: 64 cores), command BUDGET_S=580 bash bench/objectives_device.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
setup_training
cp -r models "$W/models"
cores=$(nproc)
gemm=($(manifest_files gemm_half_h200 data))
conv=($(manifest_files conv_fwd_half_h200 data plain) --remeasured $(manifest_files conv_fwd_half_h200 data graph))
recipe() { manifest_recipe "$1" | sed 's/--objectives [a-z_]* //'; }
common=(--problems-file data/problems/sweep/*.txt --out "$W/models" --compare-only)
{ echo "commit $(cat .commit 2>/dev/null); $cores cores"; echo "gemm: ${gemm[*]} $(recipe gemm_half_h200)";
  echo "conv: ${conv[*]} $(recipe conv_fwd_half_h200)"; } | tee "$W/compare_command.txt"
t=$(( $(left) - 30 ))
timeout $t python3 -m tilepick.train "${gemm[@]}" "${common[@]}" $(recipe gemm_half_h200) --only gemm_half_h200 \
  --jobs 45 --threads $(( cores * 2 / 5 )) >"$W/compare_gemm.log" 2>&1 &
timeout $t python3 -m tilepick.train "${conv[@]}" "${common[@]}" $(recipe conv_fwd_half_h200) --only conv_fwd_half_h200 \
  conv_bwd_data_half_h200 conv_bwd_weight_half_h200 --jobs 15 --threads $(( cores * 3 / 5 )) >"$W/compare_conv.log" 2>&1 &
wait
echo "compared after $(( $(date +%s) - START )) s"; tail -n 12 "$W"/compare_*.log
find "$W/models" -name '*.gz' -delete  # the boosters are unchanged: only the manifests travel back
