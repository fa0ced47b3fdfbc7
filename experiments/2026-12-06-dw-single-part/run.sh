#!/usr/bin/env bash
# bwd_weight with one part (one split, one tile over the image) writes dw from the kernel, without the fp32
# workspace and the reduce launch. One device call (carry .deps .commit): verify check.txt and layers.txt (the
# batch-1 depthwise layers of 7x7 and 14x14 images) with two single-part configs and a pool sample, memcheck one,
# then the layers' best configs of ../2026-12-06-dw-bounds (before_pairs.txt) beside a sample of SAMPLE (default
# 150) dw configs of each layer, cuDNN's rows in the same run:
#   BUDGET_S=240 bash experiments/2026-12-06-dw-single-part/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
HERE=experiments/2026-12-06-dw-single-part
source bench/gpu_session.sh
build_cli
S1="fam=dw splitk=1 dwtile=8x8x16 ppt=2 cpt=2"; S2="fam=dw splitk=1 dwtile=16x16x16 ppt=4 cpt=2"
timeout 100 $T verify -f $HERE/check.txt -c "$S1" -c "$S2" >"$W/verify_single.txt" 2>&1
echo "verify single rc=$?: $(tail -1 "$W/verify_single.txt")"; grep -A2 '^FAIL' "$W/verify_single.txt" | head
timeout 100 $T verify -f $HERE/layers.txt -c "$S1" -c "$S2" --family dw -n 6 >"$W/verify_layers.txt" 2>&1
echo "verify layers rc=$?: $(tail -1 "$W/verify_layers.txt")"; grep -A2 '^FAIL' "$W/verify_layers.txt" | head
timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $T verify -f $HERE/check.txt -c "$S1" >"$W/memcheck.txt" 2>&1
echo "memcheck exit $?: $(grep -m1 'ERROR SUMMARY' "$W/memcheck.txt")"
timed_sweep before 50 --pairs $HERE/before_pairs.txt
timed_sweep sample $(( $(left) - 15 )) -f $HERE/layers.txt --family dw --sample "${SAMPLE:-150}"
