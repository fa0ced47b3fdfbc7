#!/usr/bin/env bash
# GPU sweep runs behind bench/results/*-sweep: builds build-device/ (scripts/device_build.sh; run
# scripts/device_deps.sh first and carry .deps), then runs the phases named on the command line,
# writing record files and logs to $OUT. Phases:
#   fault      trapping + hanging kernels injected into a real sweep (4 problems, 10 configs each)
#   repeat     every pair timed twice in one run (12 shapes above 50 us, 8 configs each)
#   gemm100    100 GEMM problems x the full default pool, all GPUs (throughput)
#   data       training / validation data: the rest of the GEMM sets and the conv sets, sampled
# Data runs use --min-timed-ms 5 --max-reps 50 (recorded in each file's header).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/tilepick-sweep}"
mkdir -p "$OUT"
T=build-device/tilepick
./scripts/device_build.sh >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
export TILEPICK_CACHE_DIR="${TILEPICK_CACHE_DIR:-/tmp/tilepick-cache}"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv >"$OUT/nvidia-smi.csv"
DATA="--min-timed-ms 5 --max-reps 50 --gpus all -q"
for phase in "$@"; do
  echo "== $phase $(date -u +%FT%TZ)"
  case "$phase" in
    fault)
      $T sweep -f bench/sweep/fault_problems.txt --sample 10 --inject-fault trap --inject-fault hang \
        --launch-timeout 5 --gpus 0 -q -o "$OUT/fault.csv.gz" ;;
    repeat)
      $T sweep -f bench/sweep/repeat_problems.txt --sample 8 --repeat 2 --no-vendor --gpus all -q \
        -o "$OUT/repeat.csv.gz" ;;
    gemm100)
      grep -v '^#' data/problems/sweep/gemm_train.txt | head -100 >"$OUT/gemm100.txt"
      $T sweep -f "$OUT/gemm100.txt" $DATA --time-limit "${GEMM100_LIMIT:-330}" -o "$OUT/gemm100.csv.gz" ;;
    data)
      grep -v '^#' data/problems/sweep/gemm_train.txt | tail -n +101 >"$OUT/gemm_rest.txt"
      $T sweep -f data/problems/sweep/gemm_val.txt --sample 96 $DATA --time-limit 60 -o "$OUT/gemm_val.csv.gz"
      $T sweep -f data/problems/sweep/conv_val.txt --sample 40 $DATA --time-limit 70 -o "$OUT/conv_val.csv.gz"
      $T sweep -f data/problems/sweep/conv_train.txt --sample 40 $DATA --time-limit 150 -o "$OUT/conv_train.csv.gz"
      $T sweep -f "$OUT/gemm_rest.txt" --sample 96 $DATA --time-limit 50 -o "$OUT/gemm_rest.csv.gz" ;;
    *) echo "unknown phase $phase" >&2; exit 2 ;;
  esac
done
echo "== end $(date -u +%FT%TZ)"
