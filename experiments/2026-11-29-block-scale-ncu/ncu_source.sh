#!/usr/bin/env bash
# Per-instruction warp-stall sampling (Nsight Compute source page, SASS) of the fp8 block-scaled kernel and of
# the per-tensor kernel of the same tile on 4096^3, to see where the block-scaled one loses its cycles.
# Device tool, carry .deps: `bash experiments/2026-11-29-block-scale-ncu/ncu_source.sh`; results in $OUT/results.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
C="fam=sm90 tile=128x128x128 warps=2x1 stages=5 swz=8 epi=smem"
for v in block tensor; do
  P="gemm rcr m4096 n4096 k4096 e4m3:e4m3:bf16"; [ $v = block ] && P="$P scale=block"
  timeout 200 ncu --clock-control none --set full --import-source no -k regex:tp_gemm_sm90 -c 1 -o "$W/$v" \
    $T verify -p "$P" -c "$C" >"$W/ncu_$v.log" 2>&1
  echo "ncu $v rc=$?"
  ncu -i "$W/$v.ncu-rep" --page source --csv --print-source sass >"$W/sass_$v.csv" 2>"$W/sass_$v.err"
  ncu -i "$W/$v.ncu-rep" --page details >"$W/details_$v.txt" 2>&1
  echo "$v: $(wc -l < "$W/sass_$v.csv") sass rows; $(grep -E 'Duration' "$W/details_$v.txt" | head -1)"
  rm -f "$W/$v.ncu-rep"
done
