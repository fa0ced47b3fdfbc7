#!/usr/bin/env bash
# GPU performance run (device tool; carry .deps): best of N sampled legal configs per problem
# (cold L2, verified) next to cuBLAS / cuDNN through PyTorch, then a markdown table. Results in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/tilepick-out}"; mkdir -p "$OUT"
PROBLEMS="${PROBLEMS:-bench/perf_problems.txt}"
export TILEPICK_CACHE_DIR=/tmp/tilepick-cache TILEPICK_NUM_THREADS="$(nproc)"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv; nvcc --version | tail -2; date -u; } > "$OUT/perf_env.txt" 2>&1
[ -x build-device/tilepick ] || ./scripts/device_build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
T=build-device/tilepick
$T problem parse --json --file "$PROBLEMS" > /tmp/perf.jsonl
echo "== vendor"
python3 bench/vendor_times.py /tmp/perf.jsonl --out "$OUT/vendor.csv" > "$OUT/vendor.txt" 2>&1; tail -2 "$OUT/vendor.txt"
echo "== tilepick (sampled configs per problem)"
$T verify --file "$PROBLEMS" -n "${CONFIGS_PER_PROBLEM:-20}" --time --seed 7 --csv "$OUT/ours.csv" > "$OUT/ours.txt" 2>&1
tail -1 "$OUT/ours.txt"
python3 bench/perf_table.py "$OUT/ours.csv" "$OUT/vendor.csv" > "$OUT/perf_table.md"
head -12 "$OUT/perf_table.md"
