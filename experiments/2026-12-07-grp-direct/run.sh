#!/usr/bin/env bash
# fam=grp (grouped direct convolution on tensor cores, kernels/conv/grp_fwd.cuh), one device call (carry .deps .commit):
#   verify check.txt x 4 fixed configs against the fp64 reference, memcheck + racecheck of two pairs, then a sweep of
#   24 sampled configs of data/spaces/trial/conv_grp.json on problems.txt (the grouped fwd / unit-stride bwd_data
#   layers of data/problems/conv_grouped_dw.txt with 8-64 channels per group) with cuDNN's rows of the same run:
#   BUDGET_S=300 bash experiments/2026-12-07-grp-direct/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-07-grp-direct
source bench/gpu_session.sh
build_cli
C=(-c "fam=grp splitk=1 dwtile=8x16x64 ppt=2 cpt=16" -c "fam=grp splitk=1 dwtile=4x16x32 ppt=2 cpt=8"
   -c "fam=grp splitk=1 dwtile=8x8x128 ppt=4 cpt=8" -c "fam=grp splitk=1 dwtile=2x32x64 ppt=8 cpt=8")
verify_into verify -f $HERE/check.txt "${C[@]}"
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 $T verify -p "$(sed -n 3p $HERE/check.txt)" \
    -p "$(sed -n 10p $HERE/check.txt)" -c "fam=grp splitk=1 dwtile=8x16x64 ppt=2 cpt=16" >"$W/$tool.txt" 2>&1
  echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY\|RACECHECK SUMMARY' "$W/$tool.txt")"
done
timed_sweep grp $(( $(left) - 10 )) -f $HERE/problems.txt --space data/spaces/trial/conv_grp.json --sample 24
