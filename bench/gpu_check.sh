#!/usr/bin/env bash
# GPU correctness run for the kernel families (device tool; carry .deps). Results go to $OUT.
#   check: 520 random problems x sampled configs vs the fp64 CPU reference, a compute-sanitizer
#   memcheck subset, and JIT compile statistics.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/tilepick-out}"; mkdir -p "$OUT"
export TILEPICK_CACHE_DIR=/tmp/tilepick-cache TILEPICK_NUM_THREADS="$(nproc)"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.total --format=csv; nvcc --version | tail -2; git log -1 --format='commit %H %cd' 2>/dev/null; date -u; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
./scripts/device_build.sh > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
T=build-device/tilepick
$T arch show --device 0 | tee -a "$OUT/env.txt"
echo "== verify random problems"
$T verify --file data/problems/verify_random.txt -n "${CONFIGS_PER_PROBLEM:-3}" --csv "$OUT/verify_random.csv" > "$OUT/verify_random.txt" 2>&1
tail -3 "$OUT/verify_random.txt"; grep -c '^FAIL' "$OUT/verify_random.txt"
grep -A1 '^FAIL' "$OUT/verify_random.txt" | head -20
echo "== verify depthwise-only sample"
grep -E ' g([0-9]+) mb[0-9]+ ic\1 ' data/problems/verify_random.txt > /tmp/dw.txt || true
$T verify --file /tmp/dw.txt --family dw -n 3 --csv "$OUT/verify_dw.csv" > "$OUT/verify_dw.txt" 2>&1
tail -1 "$OUT/verify_dw.txt"; grep -A1 '^FAIL' "$OUT/verify_dw.txt" | head -10
echo "== compute-sanitizer memcheck subset"
head -25 data/problems/verify_random.txt > /tmp/san.txt
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 $T verify --file /tmp/san.txt -n 1 > "$OUT/memcheck.txt" 2>&1
echo "memcheck exit $?"; tail -4 "$OUT/memcheck.txt"
echo "== JIT compile times (fresh cache, sm_90a)"
rm -rf /tmp/tilepick-cache-jit
TILEPICK_CACHE_DIR=/tmp/tilepick-cache-jit $T jit build --arch sm_90a --limit 40 > "$OUT/jit_build.txt" 2>&1; cat "$OUT/jit_build.txt" | head -8
