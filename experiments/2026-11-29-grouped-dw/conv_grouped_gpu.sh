#!/usr/bin/env bash
# Grouped and depthwise convolutions against cuDNN on the lent GPU (device tool; carry .deps and, for GD_PAIRS,
# .device-in), one call:
#   verify  data/problems/conv_grouped_check.txt (power-of-two channels per group: fam=sm80 packs groups there)
#           x fixed fam=sm80 configs of tile N 16-128, split-K serial and parallel, against the fp64 CPU reference
#   sweep   the 'problem|config' lines of GD_PAIRS (plain or .gz; bench/model_pairs.py makes them), with cuDNN's
#           heuristic and exhaustive rows of the same run; records in gd.csv.gz
#   compare bench/sm90_compare.py --family all: geomean speed-up over cuDNN's best per direction, batch, grouping
# STEPS selects steps (default "verify sweep"); BUDGET_S the call's seconds. Results in $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
for step in ${STEPS:-verify sweep}; do
  case $step in
    verify)
      timeout 200 $T verify -f data/problems/conv_grouped_check.txt -c "fam=sm80 tile=128x16x32 warps=2x1 stages=3" \
        -c "fam=sm80 tile=64x32x32 warps=2x1 stages=5" -c "fam=sm80 tile=128x32x32 warps=4x1 stages=4" \
        -c "fam=sm80 tile=64x64x64 warps=2x2 stages=4" -c "fam=sm80 tile=128x128x32 warps=2x2 stages=3" \
        -c "fam=sm80 tile=64x32x64 warps=2x1 stages=4 splitk=4 skmode=parallel" \
        -c "fam=sm80 tile=128x64x32 warps=2x2 stages=3 splitk=2 skmode=serial" -c "fam=sm80 tile=32x64x32 warps=1x2 stages=4" \
        --csv "$W/verify_grouped.csv" \
        >"$W/verify_grouped.txt" 2>&1
      echo "verify grouped rc=$?: $(tail -1 "$W/verify_grouped.txt")"; grep -A2 '^FAIL' "$W/verify_grouped.txt" | head -20 ;;
    sweep)
      timed_sweep gd $(( $(left) - 15 )) --pairs "${GD_PAIRS:?set GD_PAIRS to a pairs file}"
      python3 bench/sm90_compare.py "$W/gd.csv.gz" --family all > "$W/compare_gd.txt" 2>&1
      grep -A40 '^geomean' "$W/compare_gd.txt" | grep -v '^replay' ;;
  esac
done
