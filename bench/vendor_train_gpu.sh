#!/usr/bin/env bash
# Re-measures the cuDNN baselines (heuristic and every algorithm, graph API first) of the vendor choice's conv
# training problems (bench/sweep/vendor_conv_train.txt) with CUDA-graph timing, time-boxed and resumable across
# calls: the one-launch records those labels came from time cuDNN's host-side call with its kernel (41-99 us of
# legacy-API host time on a short problem). Continues data/sweeps/h200-graph/vendor_conv_train.csv.gz, where the
# records are stored; results in $OUT/results.tgz.
#   BUDGET_S=570 bash bench/vendor_train_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
f=data/sweeps/h200-graph/vendor_conv_train.csv.gz
[ -f "$f" ] && cp "$f" "$W/vendor_conv_train.csv.gz"
timed_sweep vendor_conv_train $(( $(left) - 10 )) -f bench/sweep/vendor_conv_train.txt --vendor-only
