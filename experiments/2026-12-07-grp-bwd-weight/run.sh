#!/usr/bin/env bash
# fam=grp bwd_weight (kernels/conv/grp_bwd_weight.cuh), one device call (carry .deps .commit): verify check.txt x 5
# fixed configs against the fp64 reference (and fam=dw's check set: dw::stage_box is shared), memcheck + racecheck of three pairs, Nsight Compute metrics of two batch-32
# pairs (ncu.txt), then a sweep of sampled configs of data/spaces/trial/conv_grp_bwd_weight.json on problems.txt (the
# grouped bwd_weight layers of data/problems/conv_grouped_dw.txt with 8-64 channels a group) with cuDNN's rows:
#   BUDGET_S=300 bash experiments/2026-12-07-grp-bwd-weight/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-07-grp-bwd-weight
source bench/gpu_session.sh
build_cli
C=(-c "fam=grp stages=2 splitk=4 dwtile=8x16x64 ppt=2 cpt=16" -c "fam=grp stages=1 splitk=1 dwtile=4x16x32 ppt=2 cpt=8"
   -c "fam=grp stages=2 splitk=16 dwtile=4x16x64 ppt=1 cpt=8" -c "fam=grp stages=2 splitk=64 dwtile=2x8x16 ppt=1 cpt=4"
   -c "fam=grp stages=1 splitk=8 dwtile=1x16x128 ppt=1 cpt=8")
verify_into verify -f $HERE/check.txt "${C[@]}"
# dw::stage_box (shared with fam=dw) steps its indices by additions now: fam=dw's check set again
grep -E ' g([0-9]+) mb[0-9]+ ic\1 ' data/problems/verify_random.txt > /tmp/dw.txt
verify_into verify_dw --file /tmp/dw.txt --family dw -n 3
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T verify -p "$(sed -n 3p $HERE/check.txt)" \
    -p "$(sed -n 6p $HERE/check.txt)" -p "$(sed -n 12p $HERE/check.txt)" -c "fam=grp stages=2 splitk=4 dwtile=8x16x64 ppt=2 cpt=16" \
    -c "fam=grp stages=2 splitk=16 dwtile=4x16x64 ppt=1 cpt=8" >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$W/$tool.txt")"
done
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for pc in "bwd_weight g32 mb32 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16|fam=grp stages=2 splitk=16 dwtile=8x16x64 ppt=2 cpt=16" \
          "bwd_weight g32 mb32 ic1024 ih7 iw7 oc1024 kh3 kw3 sh1 sw1 ph1 pw1 bf16|fam=grp stages=2 splitk=16 dwtile=4x16x64 ppt=1 cpt=8"; do
  timeout 60 ncu --clock-control none --metrics $M -k regex:tp_grp -c 2 $T verify -p "${pc%%|*}" -c "${pc#*|}" >>"$W/ncu.txt" 2>&1
done
grep -E 'tp_grp|duration|hmma|dram__|conflicts|wavefronts|warps_active|registers' "$W/ncu.txt" | awk '{print $1, $NF}'
timed_sweep grp_wgrad $(( $(left) - 10 )) -f $HERE/problems.txt --space data/spaces/trial/conv_grp_bwd_weight.json --sample 48
