#!/usr/bin/env bash
# fam=grp (grouped direct convolution on tensor cores, kernels/conv/grp_fwd.cuh), one device call (carry .deps .commit):
#   verify check.txt x 4 fixed configs against the fp64 reference, memcheck + racecheck of two pairs, Nsight Compute
#   metrics of two batch-32 pairs (ncu.txt), then a sweep of
#   64 sampled configs of data/spaces/trial/conv_grp.json on problems.txt (the grouped fwd / unit-stride bwd_data
#   layers of data/problems/conv_grouped_dw.txt with 8-64 channels per group) with cuDNN's rows of the same run:
#   BUDGET_S=330 bash experiments/2026-12-07-grp-direct/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-07-grp-direct
source bench/gpu_session.sh
build_cli
C=(-c "fam=grp stages=2 splitk=1 dwtile=8x16x64 ppt=2 cpt=16" -c "fam=grp stages=1 splitk=1 dwtile=4x16x32 ppt=2 cpt=8"
   -c "fam=grp stages=2 splitk=1 dwtile=8x8x128 ppt=4 cpt=8" -c "fam=grp stages=1 splitk=1 dwtile=2x32x64 ppt=8 cpt=8"
   -c "fam=grp stages=2 splitk=1 dwtile=4x8x16 ppt=1 cpt=4")
verify_into verify -f $HERE/check.txt "${C[@]}"
for tool in memcheck racecheck; do
  timeout 90 compute-sanitizer --tool $tool --error-exitcode 9 $T verify -p "$(sed -n 4p $HERE/check.txt)" \
    -p "$(sed -n 11p $HERE/check.txt)" -p "$(sed -n 16p $HERE/check.txt)" -c "fam=grp stages=2 splitk=1 dwtile=8x16x64 ppt=2 cpt=16" >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$W/$tool.txt")"
done
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread
for pc in "fwd g32 mb32 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16|fam=grp stages=2 splitk=1 dwtile=8x16x64 ppt=2 cpt=16" \
          "fwd g64 mb32 ic512 ih28 iw28 oc512 kh3 kw3 sh1 sw1 ph1 pw1 bf16|fam=grp stages=2 splitk=1 dwtile=4x16x32 ppt=2 cpt=8"; do
  timeout 60 ncu --clock-control none --metrics $M -k regex:tp_grp -c 1 $T verify -p "${pc%%|*}" -c "${pc#*|}" >>"$W/ncu.txt" 2>&1
done
grep -E 'duration|hmma|dram__|conflicts|wavefronts|warps_active|registers' "$W/ncu.txt" | awk '{print $1, $NF}'
# Where the first pair's warps stall and what they issue (is the box staging's address math the cost?)
pc="fwd g32 mb32 ic256 ih28 iw28 oc256 kh3 kw3 sh1 sw1 ph1 pw1 bf16|fam=grp stages=2 splitk=1 dwtile=8x16x64 ppt=2 cpt=16"
timeout 60 ncu --clock-control none --section WarpStateStats --section InstructionStats --section SchedulerStats \
  -k regex:tp_grp -c 1 $T verify -p "${pc%%|*}" -c "${pc#*|}" >"$W/ncu_stalls.txt" 2>&1
grep -E 'Stall|Issued|Eligible|Active Warps|Executed Ipc' "$W/ncu_stalls.txt" | head -30
timed_sweep grp $(( $(left) - 10 )) -f $HERE/problems.txt --space data/spaces/trial/conv_grp.json --sample 64
