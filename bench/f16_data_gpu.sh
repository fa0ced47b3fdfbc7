#!/usr/bin/env bash
# One GPU session of data collection (issue 5), each sweep time-boxed and resumable:
#   1. the search proposals (bench/sweep/search_proposals_gemm_val.txt: tilepick search --warm 8 --top 8
#      on the GEMM validation problems, plus the model's best pool config per problem)
#   2. f16 conv training problems (data/problems/sweep/conv_train.txt in f16), 40 sampled configs
#   3. f16 conv validation problems, 40 sampled configs
#   4. the rest of the f16 GEMM validation sweep (resumes data/sweeps/h200/gemm_val_f16.csv.gz)
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
echo "built after $(( $(date +%s) - START )) s"
T=build-device/tilepick
export TILEPICK_CACHE_DIR=/tmp/tp-jit
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
for f in conv_train conv_val; do sed -E 's/\bbf16\b/f16/g' data/problems/sweep/$f.txt >"$W/${f}_f16.txt"; done
D="--min-timed-ms 5 --max-reps 50 --gpus all -q"
sweep() {  # name, seconds, sweep args...: compile + measure within the seconds (measuring stops 20 s early)
  local name=$1 s=$2; shift 2
  [ "$s" -gt 40 ] || { echo "$name: skipped (${s} s left)"; return; }
  timeout "$s" $T sweep "$@" $D --time-limit $(( s - 20 )) -o "$W/$name.csv.gz" >"$W/$name.log" 2>&1
  echo "$name rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/$name.log")"
}
sweep search_proposals 100 --pairs bench/sweep/search_proposals_gemm_val.txt
sweep conv_train_f16 $(( $(left) * 60 / 100 )) -f "$W/conv_train_f16.txt" --sample 40
sweep conv_val_f16 $(( $(left) - 90 )) -f "$W/conv_val_f16.txt" --sample 40
cp data/sweeps/h200/gemm_val_f16.csv.gz "$W/gemm_val_f16.csv.gz"
sweep gemm_val_f16 $(( $(left) - 10 )) -f data/problems/sweep/gemm_val_f16.txt --sample 96
