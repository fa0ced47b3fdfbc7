#!/usr/bin/env bash
# Distills fast students (tilepick.distill) for the models/ folders named in ONLY on the lent machine's
# CPU cores, e.g. when bench/train_device.sh ran out of time after training (copy its teachers into
# models/ first). The new fast/ folders land in $OUT/results.tgz.
#   run: carry [".deps", ".whl", ".commit"], command ONLY="conv_fwd_half_h200 ..." BUDGET_S=580 bash bench/distill_device.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
setup_training
[ -n "${ONLY:-}" ] || { echo "ONLY: name the model folders to distill"; exit 2; }
timeout $(( $(left) - 10 )) python3 -m tilepick.distill --models models --only $ONLY --threads "$(nproc)" >"$W/distill.log" 2>&1
echo "distilled rc=$? after $(( $(date +%s) - START )) s"; tail -n 8 "$W/distill.log"
for n in $ONLY; do mkdir -p "$W/$n" && cp -r "models/$n/fast" "$W/$n/"; done
