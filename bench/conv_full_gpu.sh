#!/usr/bin/env bash
# One GPU session of dense conv data (issue 5): every legal config (no --sample) on the bf16 conv
# training problems, then on the bf16 conv validation problems, each list shuffled (seed 7) so that a
# time-boxed stop leaves a random subset of problems complete. Records: conv_train_full / conv_val_full.
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
#   BUDGET_S=570 TRAIN_SHARE=60 bash bench/conv_full_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
echo "built after $(( $(date +%s) - START )) s"
T=build-device/tilepick
export TILEPICK_CACHE_DIR=/tmp/tp-jit
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
for f in conv_train conv_val; do
  { grep '^#' data/problems/sweep/$f.txt; grep -v '^#' data/problems/sweep/$f.txt | shuf --random-source=<(yes 7); } >"$W/${f}_shuffled.txt"
done
D="--min-timed-ms 5 --max-reps 50 --gpus all -q"
sweep() {  # name, seconds, sweep args...: compile + measure within the seconds (measuring stops 20 s early)
  local name=$1 s=$2; shift 2
  [ "$s" -gt 40 ] || { echo "$name: skipped (${s} s left)"; return; }
  timeout "$s" $T sweep "$@" $D --time-limit $(( s - 20 )) -o "$W/$name.csv.gz" >"$W/$name.log" 2>&1
  echo "$name rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/$name.log")"
}
sweep conv_train_full $(( $(left) * ${TRAIN_SHARE:-60} / 100 )) -f "$W/conv_train_shuffled.txt"
sweep conv_val_full $(( $(left) - 10 )) -f "$W/conv_val_shuffled.txt"
