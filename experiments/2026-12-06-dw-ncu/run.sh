#!/usr/bin/env bash
# Where the depthwise kernels of a batch-32 3x3 layer (MobileNet-v2-like, 144 channels, 56x56) spend their time:
# Nsight Compute (clocks left alone) of our fwd and bwd_weight kernels with their best config of
# bench/results/2026-11-29-grouped-dw/v1-h200-baseline, and of the kernels cuDNN's algorithms launch for the same
# problems (`tilepick vendor check`, the first NV kernels). One device call (carry .deps .commit):
#   BUDGET_S=300 bash experiments/2026-12-06-dw-ncu/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
L="ic144 ih56 iw56 oc144 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
PAIRS=("fwd g144 mb32 $L|fam=dw splitk=1 dwtile=8x32x16 ppt=16 cpt=4"
       "bwd_weight g144 mb32 $L|fam=dw splitk=4 dwtile=8x32x16 ppt=16 cpt=2")
SUM='Duration|DRAM Throughput|Memory Throughput|L1/TEX Hit|L2 Hit|Compute \(SM\) Throughput|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Size|Grid Size|Shared Memory Configuration Size|Dynamic Shared|Waves Per SM|Bank Conflicts|Executed Instructions  '
for i in "${!PAIRS[@]}"; do
  P=${PAIRS[$i]%%|*}; C=${PAIRS[$i]#*|}
  timeout 120 ncu --clock-control none --set full -k regex:tp_dw -c 2 -o "$W/ours_$i" $T verify -p "$P" -c "$C" >"$W/ours_$i.log" 2>&1
  echo "ncu ours $i rc=$? ($P)"
  ncu -i "$W/ours_$i.ncu-rep" >"$W/ours_$i.txt" 2>&1
  ncu -i "$W/ours_$i.ncu-rep" --page source --print-source sass --csv 2>/dev/null | gzip > "$W/ours_${i}_sass.csv.gz"
  rm -f "$W/ours_$i.ncu-rep"
  grep -E "^  [a-zA-Z_].*\(|$SUM" "$W/ours_$i.txt" | head -60
  timeout 150 ncu --clock-control none --section SpeedOfLight --section LaunchStats --section Occupancy \
    -k 'regex:^(?!tp_)' -c 12 $T vendor check -p "$P" >"$W/vendor_$i.txt" 2>&1
  echo "ncu vendor $i rc=$?"
  grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Registers Per|Block Size|Grid Size|Achieved Occupancy" "$W/vendor_$i.txt" | head -90
done
