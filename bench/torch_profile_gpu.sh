#!/usr/bin/env bash
# bench/torch_profile.py on the device tool: where a tilepick.torch training step's time goes per vendor mode
# (auto / off / only) beside plain torch. Results: $OUT/results.tgz (profile/, build log, nvidia-smi.csv).
#   BUDGET_S=400 [MODELS=resnet50,convnext_t] [MODES=torch,auto,off,only] bash bench/torch_profile_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_all
timeout $(( $(left) - 10 )) python3 bench/torch_profile.py --out "$W/profile" --models "${MODELS:-resnet50,convnext_t}" \
  --modes "${MODES:-torch,auto,off,only}" 2>&1 | tee "$W/profile.log" | grep -v "^ *$" | tail -60
echo "rc=${PIPESTATUS[0]} after $(( $(date +%s) - START )) s"
