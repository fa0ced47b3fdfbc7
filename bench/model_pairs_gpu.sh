#!/usr/bin/env bash
# One GPU session of active sampling (issue 5): measures the pairs of bench/sweep/model_pairs_*.txt
# (bench/model_pairs.py: a model's top configs per problem, not yet recorded), the names given in order
# (default: conv_val conv_train gemm conv_f16 gemm_f16, the first round), each sweep time-boxed
# (compile + measure, an equal share of the time left) and resumable.
# Timing as in data/sweeps/README.md. Everything lands in $OUT/results.tgz.
#   BUDGET_S=570 bash bench/model_pairs_gpu.sh [NAME...]
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
./scripts/device_build.sh >"$W/build.log" 2>&1 || { tail -30 "$W/build.log"; exit 1; }
echo "built after $(( $(date +%s) - START )) s"
T=build-device/tilepick
export TILEPICK_CACHE_DIR=/tmp/tp-jit
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$W/nvidia-smi.csv"
D="--min-timed-ms 5 --max-reps 50 --gpus all -q"
sweep() {  # name, seconds: compile + measure bench/sweep/model_pairs_NAME.txt within the seconds
  local name=$1 s=$2
  [ "$s" -gt 40 ] || { echo "$name: skipped (${s} s left)"; return; }
  timeout "$s" $T sweep --pairs bench/sweep/model_pairs_$name.txt $D --time-limit $(( s - 20 )) \
    -o "$W/model_pairs_$name.csv.gz" >"$W/$name.log" 2>&1
  echo "$name rc=$? after $(( $(date +%s) - START )) s: $(tail -1 "$W/$name.log")"
}
names=("$@")
[ $# -gt 0 ] || names=(conv_val conv_train gemm conv_f16 gemm_f16)
n=${#names[@]}
for i in "${!names[@]}"; do
  sweep "${names[$i]}" $(( ($(left) - 10) / (n - i) ))
done
