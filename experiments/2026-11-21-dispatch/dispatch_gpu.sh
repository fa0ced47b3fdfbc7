#!/usr/bin/env bash
# GPU runs behind bench/results/*-dispatch: builds build-device/ (scripts/device_deps.sh first, carry
# .deps and .commit), then
#   selftest   `tilepick selftest dispatch`: strategies, vendor modes, bad inputs, threads, 2 GPUs
#   run        `tilepick run` over experiments/2026-11-21-dispatch/problems.txt: heuristic, top_k (k=4, vendor auto),
#              vendor only; each checked against the fp64 GPU reference and timed with cold L2
#   firstcall  time from process start to a ready plan (top_k) on a cold JIT cache, a warm disk
#              cache and a warm plan cache
#   f16val     the validation problem sets in f16 (held-out data for the half-precision models),
#              swept on GPUs ${F16_GPUS:-all}
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/tilepick-dispatch}"
mkdir -p "$OUT"
T=build-device/tilepick
[ -n "${SKIP_BUILD:-}" ] || ./scripts/device_build.sh >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$OUT/nvidia-smi.csv"
P=experiments/2026-11-21-dispatch/problems.txt
for phase in "$@"; do
  echo "== $phase $(date -u +%FT%TZ)"
  case "$phase" in
    selftest)
      TILEPICK_CACHE_DIR=/tmp/tp-jit $T selftest dispatch >"$OUT/selftest.txt" 2>&1; echo "selftest rc=$?"
      tail -3 "$OUT/selftest.txt" ;;
    run)
      export TILEPICK_CACHE_DIR=/tmp/tp-jit
      for s in "heuristic --vendor off" "top_k -k 4 --vendor auto" "heuristic --vendor only"; do
        name=$(echo "$s" | tr ' ' '_' | tr -d '-')
        $T run -f $P --device "${RUN_GPU:-0}" --strategy $s >"$OUT/run_$name.txt" 2>&1; echo "run $s rc=$?"
      done ;;
    firstcall)
      rm -rf /tmp/tp-cold "$OUT/plans.json"
      for stage in cold_jit warm_disk warm_plan_cache; do
        cache=""; [ "$stage" = warm_plan_cache ] && cache="--cache $OUT/plans.json"
        [ "$stage" = warm_disk ] && cache="--cache $OUT/plans.json"
        t0=$(date +%s%N)
        TILEPICK_CACHE_DIR=/tmp/tp-cold $T plan -f $P --device "${RUN_GPU:-0}" --strategy top_k -k 4 $cache --json \
          >"$OUT/firstcall_$stage.json" 2>"$OUT/firstcall_$stage.err"
        rc=$?; t1=$(date +%s%N)
        echo "$stage rc=$rc seconds=$(( (t1 - t0) / 1000000 ))e-3 problems=$(grep -c '^[a-z_0-9]*:' $P)" | tee -a "$OUT/firstcall.txt"
      done ;;
    f16val)
      for f in gemm_val conv_val; do
        sed -E 's/\bbf16\b/f16/g' data/problems/sweep/$f.txt >"$OUT/${f}_f16.txt"
      done
      D="--min-timed-ms 5 --max-reps 50 --gpus ${F16_GPUS:-all} -q"
      $T sweep -f "$OUT/gemm_val_f16.txt" --sample 96 $D --time-limit ${F16_GEMM_S:-100} -o "$OUT/gemm_val_f16.csv.gz"
      $T sweep -f "$OUT/conv_val_f16.txt" --sample 40 $D --time-limit ${F16_CONV_S:-120} -o "$OUT/conv_val_f16.csv.gz" ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
echo "== end $(date -u +%FT%TZ)"
