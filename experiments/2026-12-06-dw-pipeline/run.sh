#!/usr/bin/env bash
# dw_fwd and dw_bwd_data taking several tiles a block, the next tile's box loading while this one computes
# (src/jit/family_dw.cpp tiles_per_block; TILEPICK_DW_PIPE="min_blocks,max_tiles" overrides its rule), and
# bwd_weight with one part writing dw itself (../2026-12-06-dw-single-part), the reduce launch overlapped. One device call (carry .deps .commit):
#   verify check.txt with every plan pipelined (TILEPICK_DW_PIPE=1,8) and native.txt with the default rule,
#   racecheck + memcheck of pipelined plans, the single-part checks; then pairs.txt (the batch-32 / batch-8
#   depthwise fwd and bwd_data layers of ../2026-12-06-dw-bounds with their 3 best configs) swept with
#   the rule off, the default, off again (heat drift), then min_blocks 264, cuDNN's rows in the first sweep;
#   wgrad_pairs.txt (every depthwise bwd_weight layer, best 3 configs) with the reduce launch overlapped
#   (griddepcontrol) and not (TILEPICK_DW_NO_OVERLAP), in turns, as time allows:
#   BUDGET_S=570 bash experiments/2026-12-06-dw-pipeline/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-dw-pipeline
SP=experiments/2026-12-06-dw-single-part
source bench/gpu_session.sh
build_cli
TILEPICK_DW_PIPE=1,8 verify_into verify_forced -f $HERE/check.txt --family dw -n 8
verify_into verify_native -f $HERE/native.txt --family dw -n 6
S1="fam=dw splitk=1 dwtile=8x8x16 ppt=2 cpt=2"; S2="fam=dw splitk=1 dwtile=16x16x16 ppt=4 cpt=2"
verify_into verify_single -f $SP/check.txt -c "$S1" -c "$S2"
verify_into verify_single_layers -f $SP/layers.txt -c "$S1" -c "$S2" --family dw -n 4
P1="fam=dw splitk=1 dwtile=8x32x16 ppt=16 cpt=4"
for tool in racecheck memcheck; do
  TILEPICK_DW_PIPE=1,8 timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T verify \
    -p "fwd g40 mb3 ic40 ih19 iw23 oc40 kh3 kw3 sh1 sw1 ph1 pw1 bf16 ep=bias+relu" \
    -p "bwd_data g24 mb2 ic24 ih13 iw11 oc24 kh7 kw7 sh1 sw1 ph3 pw3 f32" \
    -p "bwd_data g40 mb3 ic40 ih19 iw23 oc40 kh3 kw3 sh2 sw2 ph1 pw1 bf16" -c "$P1" -c "$S1" >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$W/$tool.txt")"
done
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T verify -f $SP/check.txt -c "$S1" >"$W/memcheck_single.txt" 2>&1
echo "memcheck single exit $?: $(grep -m1 'ERROR SUMMARY' "$W/memcheck_single.txt")"
cap() { local l=$(( $(left) - 15 )); echo $(( $1 < l ? $1 : l )); }  # seconds for the next sweep
TILEPICK_DW_PIPE=1000000000,1 TILEPICK_DW_NO_OVERLAP=1 timed_sweep off $(cap 90) --pairs $HERE/pairs.txt
timed_sweep on $(cap 50) --pairs $HERE/pairs.txt --no-vendor
TILEPICK_DW_NO_OVERLAP=1 timed_sweep wgrad_off $(cap 70) --pairs $HERE/wgrad_pairs.txt
timed_sweep wgrad_on $(cap 45) --pairs $HERE/wgrad_pairs.txt --no-vendor
TILEPICK_DW_PIPE=1000000000,1 TILEPICK_DW_NO_OVERLAP=1 timed_sweep off2 $(cap 50) --pairs $HERE/pairs.txt --no-vendor
TILEPICK_DW_PIPE=264,8 timed_sweep on264 $(cap 50) --pairs $HERE/pairs.txt --no-vendor
TILEPICK_DW_NO_OVERLAP=1 timed_sweep wgrad_off2 $(cap 45) --pairs $HERE/wgrad_pairs.txt --no-vendor
