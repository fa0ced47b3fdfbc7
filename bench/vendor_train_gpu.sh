#!/usr/bin/env bash
# Re-measures the cuDNN baselines (heuristic and every algorithm, graph API first) of the vendor choice's conv
# training problems (bench/sweep/vendor_conv_train.txt) with CUDA-graph timing, time-boxed and resumable across
# calls: the one-launch records those labels came from time cuDNN's host-side call with its kernel (41-99 us of
# legacy-API host time on a short problem). Continues data/sweeps/h200-graph/vendor_conv_train.csv.gz, where the
# records are stored; results in $OUT/results.tgz. LIST=vendor_conv_val: the README eval's held-out conv problems
# (bench/sweep/vendor_conv_val.txt), whose recheck_val records hold the legacy API's heuristic choice.
#   BUDGET_S=570 [LIST=vendor_conv_train|vendor_conv_val] bash bench/vendor_train_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
list=${LIST:-vendor_conv_train}
f=data/sweeps/h200-graph/$list.csv.gz
[ -f "$f" ] && cp "$f" "$W/$list.csv.gz"
timed_sweep "$list" $(( $(left) - 10 )) -f "bench/sweep/$list.txt" --vendor-only
