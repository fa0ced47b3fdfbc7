#!/usr/bin/env bash
# tf32 GEMM training and held-out data for a learned tf32 model (docs/selection.md, "tf32 GEMM"): on
# the lent GPU, one time-boxed, resumable sweep per LIST entry, CUDA-graph timed (data/sweeps/README.md):
#   gemm_train_tf32  data/problems/sweep/gemm_train_tf32.txt, 32 sampled configs per problem, no vendor rows
#   gemm_val2_tf32   data/problems/sweep/gemm_val2_tf32.txt, 24 sampled configs and the cuBLASLt baselines
#   PAIRS_NAME       bench/sweep/PAIRS_NAME.txt.gz ('problem|config' lines, e.g. a model's first 4), no vendor rows
# RESUME_DIR=DIR starts each list from DIR/NAME.csv.gz (an earlier call's records). Records are per device
# kind: the GPU's name is in nvidia-smi.csv and in every record file's header.
#   BUDGET_S=570 LISTS="gemm_train_tf32 gemm_val2_tf32" [RESUME_DIR=dir] bash experiments/2026-11-25-tf32/tf32_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_cli
for list in ${LISTS:-gemm_train_tf32}; do
  [ -n "${RESUME_DIR:-}" ] && [ -f "$RESUME_DIR/$list.csv.gz" ] && cp "$RESUME_DIR/$list.csv.gz" "$W/$list.csv.gz"
  case $list in
    gemm_train_tf32) args=(-f "data/problems/sweep/$list.txt" --sample 32 --seed 1 --no-vendor) ;;
    gemm_val2_tf32)  args=(-f "data/problems/sweep/$list.txt" --sample 24 --seed 1) ;;
    *)               args=(--pairs "bench/sweep/$list.txt.gz" --no-vendor) ;;
  esac
  timed_sweep "$list" $(( $(left) - 10 )) "${args[@]}"
done
