#!/usr/bin/env bash
# Re-measures the cuDNN baselines (heuristic and every algorithm, graph API first) of the vendor choice's conv
# training problems (bench/sweep/vendor_conv_train.txt) with CUDA-graph timing, time-boxed and resumable across
# calls: the one-launch records those labels came from time cuDNN's host-side call with its kernel (41-99 us of
# legacy-API host time on a short problem). Continues data/sweeps/h200-graph/vendor_conv_train.csv.gz, where the
# records are stored; results in $OUT/results.tgz. LIST=vendor_conv_val: the README eval's held-out conv problems
# (bench/sweep/vendor_conv_val.txt), whose recheck_val records hold the legacy API's heuristic choice.
# On another device: DIR (where the records live, default data/sweeps/h200-graph), NAME (their file stem, default
# LIST), GPU (a name the device must show, e.g. H100; the call stops otherwise), VENDOR_ARGS (more sweep options,
# e.g. --vendor-heuristic-only: the labels need the heuristic kernel alone). LIST=vendor_conv_train2: the other
# 4,033 conv training problems (bench/sweep/vendor_conv_train2.txt), run on all GPUs of the machine.
#   BUDGET_S=570 [LIST=vendor_conv_train|vendor_conv_val] [DIR=... NAME=... GPU=...] bash experiments/2026-11-26-vendor-train/vendor_train_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${GPU:-}" ] && ! nvidia-smi --query-gpu=name --format=csv,noheader | grep -q "$GPU"; then
  echo "not a $GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader)"; exit 3
fi
source bench/gpu_session.sh
build_cli
list=${LIST:-vendor_conv_train}
name=${NAME:-$list}
f=${DIR:-data/sweeps/h200-graph}/$name.csv.gz
[ -f "$f" ] && cp "$f" "$W/$name.csv.gz"
timed_sweep "$name" $(( $(left) - 10 )) -f "bench/sweep/$list.txt" --vendor-only ${VENDOR_ARGS:-}
