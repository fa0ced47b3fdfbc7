#!/usr/bin/env bash
# Depthwise kernels with the rows of their staged boxes padded to one pixel past a multiple of 128 bytes
# (tp::dw_row_pitch, TILEPICK_DW_PAD=1) against unpadded rows (the default), one device call (carry .deps .commit):
#   verify check.txt (every direction, 2-D and 3-D, odd sizes; 10 sampled configs a problem) padded and unpadded,
#   racecheck + memcheck of padded plans; Nsight Compute's shared-load wavefronts and bank conflicts of two batch-32
#   3x3 pairs both ways; then pairs.txt (every depthwise layer of ../2026-12-06-dw-bounds with its 3 best configs)
#   swept unpadded, padded, cuDNN on problems.txt (their problems), the bwd_weight pairs (wgrad_pairs.txt) padded
#   with a slice ring of at most 24 KB (TILEPICK_DW_STAGE_BYTES; default 64 KB), unpadded and padded again (drift):
#   BUDGET_S=570 bash experiments/2026-12-07-dw-row-pitch/run.sh   (at tree 4bad9e9: TILEPICK_DW_STAGE_BYTES is gone since)
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-07-dw-row-pitch
source bench/gpu_session.sh
build_cli
TILEPICK_DW_PAD=1 verify_into verify_pad -f $HERE/check.txt --family dw -n 10
verify_into verify_nopad -f $HERE/check.txt --family dw -n 4 --seed 7
L="ic144 ih56 iw56 oc144 kh3 kw3 sh1 sw1 ph1 pw1 bf16"
F="fam=dw splitk=1 dwtile=8x32x16 ppt=16 cpt=4"; B="fam=dw splitk=4 dwtile=8x32x16 ppt=16 cpt=2"
for tool in racecheck memcheck; do
  TILEPICK_DW_PAD=1 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T verify \
    -p "fwd g40 mb3 ic40 ih19 iw23 oc40 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu" \
    -p "bwd_data g40 mb3 ic40 ih19 iw23 oc40 kh3 kw3 sh2 sw2 ph1 pw1 bf16" \
    -p "bwd_weight g40 mb3 ic40 ih19 iw23 oc40 kh3 kw3 sh1 sw1 ph1 pw1 bf16" -c "$F" -c "$B" >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$W/$tool.txt")"
done
M=l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,gpu__time_duration.sum
for mode in pad nopad; do
  for pc in "fwd g144 mb32 $L|$F" "bwd_weight g144 mb32 $L|$B"; do
    [ $mode = pad ] && export TILEPICK_DW_PAD=1 || unset TILEPICK_DW_PAD
    timeout 60 ncu --clock-control none --metrics $M -k regex:tp_dw -c 1 $T verify -p "${pc%%|*}" -c "${pc#*|}" \
      >>"$W/ncu_$mode.txt" 2>&1
    echo "ncu $mode ${pc%% *}: $(grep -E 'wavefronts|conflicts|duration' "$W/ncu_$mode.txt" | tail -3 | awk '{print $NF}' | tr '\n' ' ')"
  done
done
unset TILEPICK_DW_PAD
cap() { local l=$(( $(left) - 15 )); echo $(( $1 < l ? $1 : l )); }  # seconds for the next sweep
timed_sweep nopad $(cap 80) --pairs $HERE/pairs.txt --no-vendor
TILEPICK_DW_PAD=1 timed_sweep pad $(cap 60) --pairs $HERE/pairs.txt --no-vendor
timed_sweep vendor $(cap 80) -f $HERE/problems.txt --vendor-only
TILEPICK_DW_PAD=1 TILEPICK_DW_STAGE_BYTES=24576 timed_sweep ring24 $(cap 50) --pairs $HERE/wgrad_pairs.txt --no-vendor
timed_sweep nopad2 $(cap 50) --pairs $HERE/pairs.txt --no-vendor
TILEPICK_DW_PAD=1 timed_sweep pad2 $(cap 50) --pairs $HERE/pairs.txt --no-vendor
