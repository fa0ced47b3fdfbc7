#!/usr/bin/env bash
# fam=sm90 GEMM on the lent GPU (device tool; carry .deps), one call:
#   verify   data/problems/sm90_check.txt x sampled sm90 configs against the fp64 CPU reference
#            (random normal inputs, poisoned outputs); CHECK_N configs per problem (default 8), then fixed
#            split-K, stream-K, ping-pong and tile_n 96 / 160 / 224 configs on every problem
#   random   data/problems/verify_random_sm90.txt (520 random sm90 GEMMs) x 1 sampled config each
#   block    fp8 with block scales: data/problems/sm90_check_fp8_block.txt x fixed configs (BLOCK_TIMEOUT s, default 300),
#            then x BLOCK_SAMPLED (default 6, 0: none) sampled ones
#   conv_random  data/problems/verify_random_conv.txt (520 random convolutions, every direction, groups, depthwise)
#            x 1 sampled config of the default pool each, and x 4 sm90 trial configs where legal
#   sanitize compute-sanitizer memcheck / racecheck / synccheck on 5 problems (fp8 per-tensor, fp8 block scales), 1 sampled config each (or SAN_CONFIGS)
#   ncu      Nsight Compute (--clock-control none) of NCU_CONFIG and of cuBLASLt on NCU_PROBLEM; ncu_ours_sass.csv.gz:
#            per SASS instruction of ours, executed count and warp-stall samples by reason; ncu_stalls.txt: their
#            sums by kernel region and the top instructions (bench/ncu_stalls.py)
#   sass     HGMMA / UTMALDG / setmaxnreg counts in one compiled sm90 kernel (cuobjdump)
#   conv     the trial space data/spaces/trial/conv_sm90.json: verify data/problems/sm90_conv_check.txt (CONV_CHECK;
#            convolutions by TMA im2col, every direction) with fixed configs, compute-sanitizer on the problems of
#            CONV_SANITIZE ('problem|config;...', the first pair's config for all), then a sweep of CONV_PAIRS, or of CONV_FILE
#            (default data/problems/sm90_conv_fwd.txt; sm90_conv_pointwise.txt holds the 1x1 layers) x the space's
#            configs matching every regexp of CONV_GREP (default: 4 stages, no cluster, no split), with cuDNN's rows;
#            CONV_LEAVE: seconds left for the steps after it (default 15)
#   tf32     f32 GEMMs read as tf32 (data/problems/sm90_tf32.txt) on the space
#            data/spaces/gemm_sm90_tf32.json: verify the check.* rows with fixed configs, then a sweep
#            of the space's configs matching TF32_GREP (default: stages 3-5, swz 8) on the perf.* rows with
#            cuBLASLt (FAST_TF32) of the same run
#   bandwidth  the device copy rate (bench/copy_bandwidth.cu, nvcc); later compare tables show each GEMM's share of it
#   perf     `tilepick sweep` of PERF_FILE (default data/problems/sm90_perf.txt) over the sm90 space
#            (or SWEEP_ARGS, or the configs matching every regexp of PERF_GREP, or the pairs of the file
#            PERF_PAIRS) with the cuBLASLt
#            rows of the same run; bench/sm90_compare.py table
# STEPS selects steps (default "verify sanitize sass perf"; random on request). Results in $OUT/results.tgz.
# Pairs files (PERF_PAIRS, CONV_PAIRS; plain or .gz; bench/winner_pairs.py makes one from a problem set and earlier
# records): scripts/device_aside.sh moves bench/results out of the copied tree, so copy a results folder's
# pairs.txt.gz into .device-in/ (git-ignored) and carry that folder.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu_session.sh
build_cli
$T arch show --device 0 > "$W/arch.txt" 2>&1
echo "sm90 pool: $($T configs count 2>/dev/null | grep gemm_sm90 | tr -s " ")"
# space_sweep NAME SPACE PROBLEMS REGEXPS: `tilepick sweep` of the configs of SPACE (name or .json) that match
# every extended regexp of REGEXPS (one word each) on every problem of the file PROBLEMS (`name:` tags dropped).
space_sweep() {
  local name=$1 space=$2 problems=$3 re; shift 3
  $T configs list -s "$space" > "$W/${name}_configs.txt"
  for re in "$@"; do grep -E "$re" "$W/${name}_configs.txt" > "$W/c.tmp"; mv "$W/c.tmp" "$W/${name}_configs.txt"; done
  grep -v '^#' "$problems" | sed 's/^[^:]*: //' | while read -r prob; do sed "s/^/$prob|/" "$W/${name}_configs.txt"; done \
    > "$W/${name}_pairs.txt"
  echo "$name: $(wc -l < "$W/${name}_configs.txt") configs, $(wc -l < "$W/${name}_pairs.txt") pairs"
  timed_sweep "$name" $(( $(left) - $PERF_LEAVE )) --pairs "$W/${name}_pairs.txt"
}
PERF_LEAVE=${PERF_LEAVE:-15} BLOCK_TIMEOUT=${BLOCK_TIMEOUT:-300} BLOCK_SAMPLED=${BLOCK_SAMPLED:-6}
COPY_ARG=()
for step in ${STEPS:-verify sanitize sass perf}; do
  case $step in
    bandwidth)
      copy_rate; COPY_ARG=(--copy-gbs "$COPY_GBS") ;;
    verify)
      timeout 150 $T verify -f data/problems/sm90_check.txt --family sm90 -n "${CHECK_N:-8}" --csv "$W/verify.csv" >"$W/verify.txt" 2>&1
      echo "verify rc=$?: $(tail -1 "$W/verify.txt")"; grep -A2 '^FAIL' "$W/verify.txt" | head -30
      # Split-K, stream-K, ping-pong and double-buffered staging on every check problem (the sample above draws few of them).
      timeout 150 $T verify -f data/problems/sm90_check.txt -c "fam=sm90 tile=64x128x64 warps=1x1 stages=4 splitk=4 skmode=parallel" \
        -c "fam=sm90 tile=128x128x64 warps=2x1 stages=4 splitk=3 skmode=parallel" \
        -c "fam=sm90 tile=64x128x64 warps=1x2 stages=5 splitk=3 skmode=parallel" \
        -c "fam=sm90 tile=128x128x64 warps=1x2 stages=4 swz=8 cluster=2x1 epi=smem" \
        -c "fam=sm90 tile=64x256x64 warps=1x2 stages=4 cluster=1x2 epi=direct" \
        -c "fam=sm90 tile=128x64x64 warps=1x2 stages=6 epi=smem" \
        -c "fam=sm90 tile=128x256x64 warps=2x1 stages=4 swz=8 cluster=1x2 epi=smem" \
        -c "fam=sm90 tile=128x128x128 warps=1x2 stages=4 swz=8 cluster=2x1 epi=smem" \
        -c "fam=sm90 tile=128x256x128 warps=2x1 stages=3 cluster=1x2 epi=direct" \
        -c "fam=sm90 tile=256x128x64 warps=2x1 stages=4 swz=8 cluster=1x2 epi=smem" \
        -c "fam=sm90 tile=128x128x64 warps=2x1 stages=5 splitk=4 skmode=serial swz=8 epi=smem" \
        -c "fam=sm90 tile=64x128x64 warps=1x1 stages=6 splitk=2 skmode=serial swz=8 epi=direct" \
        -c "fam=sm90 tile=128x192x64 warps=2x1 stages=5 swz=8 cluster=2x1 epi=smem" \
        -c "fam=sm90 tile=64x192x64 warps=1x2 stages=5 swz=8 epi=direct" \
        -c "fam=sm90 tile=64x128x128 warps=1x1 stages=5 splitk=3 skmode=parallel" \
        -c "fam=sm90 tile=128x160x64 warps=2x1 stages=5 swz=8 epi=smem" -c "fam=sm90 tile=128x224x64 warps=2x1 stages=4 cluster=2x1 epi=smem" \
        -c "fam=sm90 tile=64x160x64 warps=1x1 stages=5 cluster=1x2 epi=direct" -c "fam=sm90 tile=128x96x64 warps=1x2 stages=6 epi=smem" \
        -c "fam=sm90 tile=128x96x64 warps=2x1 stages=5 splitk=3 skmode=serial swz=8 epi=smem" \
        -c "fam=sm90 tile=128x160x128 warps=2x1 stages=4 swz=8 cluster=1x2 epi=smem" -c "fam=sm90 tile=128x224x128 warps=2x1 stages=4 epi=smem" \
        -c "fam=sm90 tile=64x32x64 warps=1x1 stages=8 epi=smem" -c "fam=sm90 tile=64x32x64 warps=1x1 stages=8 cluster=2x1 epi=direct" \
        -c "fam=sm90 tile=128x32x64 warps=1x2 stages=6 splitk=2 skmode=parallel" -c "fam=sm90 tile=64x32x128 warps=1x1 stages=8 splitk=2 skmode=serial" \
        -c "fam=sm90 tile=16x128x64 warps=1x1 stages=12" -c "fam=sm90 tile=32x64x64 warps=1x1 stages=16 splitk=3 skmode=parallel" \
        -c "fam=sm90 tile=16x64x128 warps=1x1 stages=16" -c "fam=sm90 tile=32x128x32 warps=1x1 stages=10" \
        --csv "$W/verify_fixed.csv" >"$W/verify_fixed.txt" 2>&1
      echo "verify split-K + ping-pong rc=$?: $(tail -1 "$W/verify_fixed.txt")"; grep -A2 '^FAIL' "$W/verify_fixed.txt" | head -20 ;;
    block)  # fp8 block scales (scale=block): the check set x fixed block-legal configs (cooperative, clusters,
      # one consumer, stream-K, parallel split-K, both epilogues), then a sample of the space
      timeout "$BLOCK_TIMEOUT" $T verify -f data/problems/sm90_check_fp8_block.txt -c "fam=sm90 tile=128x128x128 warps=2x1 stages=4 swz=8 epi=smem" \
        -c "fam=sm90 tile=128x128x128 warps=2x1 stages=4 swz=8 cluster=2x1 epi=direct" -c "fam=sm90 tile=128x64x128 warps=2x1 stages=5 cluster=1x2 epi=smem" \
        -c "fam=sm90 tile=64x128x128 warps=1x1 stages=5 epi=smem" -c "fam=sm90 tile=64x64x128 warps=1x1 stages=6 epi=direct" \
        -c "fam=sm90 tile=128x128x128 warps=2x1 stages=4 splitk=2 skmode=serial swz=8 epi=smem" \
        -c "fam=sm90 tile=64x128x128 warps=1x1 stages=5 splitk=3 skmode=parallel" -c "fam=sm90 tile=128x192x128 warps=2x1 stages=4 swz=8 epi=smem" \
        -c "fam=sm90 tile=128x192x128 warps=2x1 stages=4 swz=8 cluster=2x1 epi=direct" -c "fam=sm90 tile=64x192x128 warps=1x1 stages=5 splitk=2 skmode=serial epi=smem" \
        --csv "$W/verify_block.csv" >"$W/verify_block.txt" 2>&1
      echo "verify block rc=$?: $(tail -1 "$W/verify_block.txt")"; grep -A2 '^FAIL' "$W/verify_block.txt" | head -20
      if [ "$BLOCK_SAMPLED" -gt 0 ]; then
        timeout 200 $T verify -f data/problems/sm90_check_fp8_block.txt --family sm90 -n "$BLOCK_SAMPLED" --seed 5 \
          --csv "$W/verify_block_sampled.csv" >"$W/verify_block_sampled.txt" 2>&1
        echo "verify block sampled rc=$?: $(tail -1 "$W/verify_block_sampled.txt")"; grep -A2 '^FAIL' "$W/verify_block_sampled.txt" | head -20
      fi ;;
    conv_random)  # 520 random convolutions (bench/random_problems.py --conv): a sampled config of the default pool
      # each (sm80, dw), then the sm90-shaped ones with four trial-space configs (pairs that are not legal are skipped)
      timeout 240 $T verify -f data/problems/verify_random_conv.txt -n 1 --seed 3 --csv "$W/verify_random_conv.csv" \
        >"$W/verify_random_conv.txt" 2>&1
      echo "verify random conv rc=$?: $(tail -1 "$W/verify_random_conv.txt")"; grep -A2 '^FAIL' "$W/verify_random_conv.txt" | head -20
      timeout 200 $T verify -f data/problems/verify_random_conv.txt -c "fam=sm90 tile=128x128x64 warps=2x1 stages=4 swz=8 epi=smem" \
        -c "fam=sm90 tile=128x128x64 warps=1x2 stages=4 swz=8 epi=direct" -c "fam=sm90 tile=128x128x64 warps=2x1 stages=5 splitk=2 skmode=serial swz=8 epi=smem" \
        -c "fam=sm90 tile=64x128x64 warps=1x1 stages=6 splitk=3 skmode=parallel swz=8" --csv "$W/verify_random_conv_sm90.csv" \
        >"$W/verify_random_conv_sm90.txt" 2>&1
      echo "verify random conv sm90 rc=$?: $(tail -1 "$W/verify_random_conv_sm90.txt")"; grep -A2 '^FAIL' "$W/verify_random_conv_sm90.txt" | head -20 ;;
    random)  # one sampled sm90 config for each of 520 random problems (bench/random_problems.py --sm90)
      timeout 200 $T verify -f data/problems/verify_random_sm90.txt --family sm90 -n 1 --seed 2 --csv "$W/verify_random.csv" \
        >"$W/verify_random.txt" 2>&1
      echo "verify random rc=$?: $(tail -1 "$W/verify_random.txt")"; grep -A2 '^FAIL' "$W/verify_random.txt" | head -20 ;;
    conv)
      # Correctness: convolutions by TMA im2col (CONV_CHECK) with fixed configs: cooperative, clusters
      # sharing B (2x1) and A (1x2, im2col multicast), ping-pong, stream-K, parallel split-K, epi=direct.
      CC=${CONV_CHECK-data/problems/sm90_conv_check.txt}  # CONV_CHECK= (empty) skips the checks
      if [ -n "$CC" ]; then timeout 200 $T verify -f "$CC" -c "fam=sm90 tile=128x128x64 warps=2x1 stages=4 swz=8 epi=smem" \
        -c "fam=sm90 tile=128x256x64 warps=2x1 stages=3 swz=8 cluster=2x1 epi=smem" -c "fam=sm90 tile=128x128x64 warps=2x1 stages=4 swz=8 cluster=1x2 epi=smem" \
        -c "fam=sm90 tile=128x128x64 warps=1x2 stages=4 swz=8 epi=smem" -c "fam=sm90 tile=128x128x64 warps=2x1 stages=5 splitk=2 skmode=serial swz=8 epi=smem" \
        -c "fam=sm90 tile=64x128x64 warps=1x1 stages=6 splitk=3 skmode=parallel swz=8" -c "fam=sm90 tile=64x192x64 warps=1x1 stages=5 swz=8 epi=direct" \
        -c "fam=sm90 tile=128x128x64 warps=2x1 stages=4 swz=8 epi=direct" -c "fam=sm90 tile=128x128x64 warps=1x2 stages=4 swz=8 epi=direct" \
        -c "fam=sm90 tile=128x128x64 warps=2x1 stages=5 splitk=2 skmode=serial swz=8 epi=direct" \
        -c "fam=sm90 tile=128x256x64 warps=2x1 stages=3 swz=8 cluster=2x1 epi=direct" \
        --csv "$W/verify_conv.csv" >"$W/verify_conv.txt" 2>&1
      echo "verify conv rc=$?: $(tail -1 "$W/verify_conv.txt")"; grep -A2 '^FAIL' "$W/verify_conv.txt" | head -20; fi
      # CONV_SANITIZE: ';'-separated 'problem|config' pairs under compute-sanitizer memcheck / racecheck / synccheck
      if [ -n "${CONV_SANITIZE:-}" ]; then IFS=';' read -ra sp <<< "$CONV_SANITIZE"; args=()
        for pc in "${sp[@]}"; do args+=(-p "${pc%%|*}"); done; cfg=${sp[0]#*|}
        for tool in memcheck racecheck synccheck; do
          timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $T verify "${args[@]}" -c "$cfg" >"$W/conv_$tool.txt" 2>&1
          echo "conv $tool exit $?: $(grep -m1 'ERROR SUMMARY' "$W/conv_$tool.txt")"; done; fi
      # Speed: CONV_PAIRS ('problem|config' lines), else CONV_FILE x the trial space's configs matching CONV_GREP.
      if [ -n "${CONV_PAIRS:-}" ]; then timed_sweep conv $(( $(left) - ${CONV_LEAVE:-15} )) --pairs "$CONV_PAIRS"
      else space_sweep conv data/spaces/trial/conv_sm90.json "${CONV_FILE:-data/problems/sm90_conv_fwd.txt}" ${CONV_GREP:-"stages=4 " "cluster=1x1" "splitk=1"}; fi
      python3 bench/sm90_compare.py "$W/conv.csv.gz" > "$W/compare_conv.txt" 2>&1; grep -v "^replay" "$W/compare_conv.txt" | tail -30 ;;
    tf32)
      grep '^check' data/problems/sm90_tf32.txt > "$W/tf32_check.txt"; grep '^perf' data/problems/sm90_tf32.txt > "$W/tf32_perf.txt"
      timeout 200 $T verify -f "$W/tf32_check.txt" -c "fam=sm90 tile=128x128x32 warps=2x1 stages=4 epi=smem" \
        -c "fam=sm90 tile=128x256x32 warps=2x1 stages=3 cluster=2x1 epi=smem" -c "fam=sm90 tile=128x128x32 warps=1x2 stages=4" \
        -c "fam=sm90 tile=64x128x32 warps=1x1 stages=6 splitk=3 skmode=parallel" \
        -c "fam=sm90 tile=128x128x32 warps=2x1 stages=5 splitk=2 skmode=serial epi=smem" --csv "$W/verify_tf32.csv" >"$W/verify_tf32.txt" 2>&1
      echo "verify tf32 rc=$?: $(tail -1 "$W/verify_tf32.txt")"; grep -A2 '^FAIL' "$W/verify_tf32.txt" | head -20
      space_sweep tf32 data/spaces/gemm_sm90_tf32.json "$W/tf32_perf.txt" ${TF32_GREP:-"stages=[345] " "swz=8"}
      python3 bench/sm90_compare.py "$W/tf32.csv.gz" --peak 494.7 > "$W/compare_tf32.txt" 2>&1; grep -v "^replay" "$W/compare_tf32.txt" | tail -12 ;;
    sanitize)
      # SAN_CONFIGS: ';'-separated configs instead of one sampled per problem (pairs that are not legal are skipped)
      sel=(-n 1 --family sm90); if [ -n "${SAN_CONFIGS:-}" ]; then sel=(); IFS=';' read -ra cs <<< "$SAN_CONFIGS"
        for c in "${cs[@]}"; do sel+=(-c "$c"); done; fi
      for tool in memcheck racecheck synccheck; do
        timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 $T verify "${sel[@]}" \
          -p 'gemm rcr m131 n232 k200 bf16 ep=bias+relu' -p 'gemm rcr batch3 m64 n80 k96 f16 beta=0.5' \
          -p 'gemm rcr m1 n777 k136 bf16' -p 'gemm rcr m131 n232 k208 e4m3:e4m3:bf16 ep=bias+relu' \
          -p 'gemm rcr m200 n384 k640 e4m3:e4m3:bf16 scale=block' >"$W/$tool.txt" 2>&1
        echo "$tool exit $?: $(grep -m1 'ERROR SUMMARY' "$W/$tool.txt")"
      done ;;
    sass)
      f=$(ls -S "$TILEPICK_CACHE_DIR"/*/*.cubin 2>/dev/null | head -1)
      [ -z "$f" ] && f=$(find "$TILEPICK_CACHE_DIR" -name '*cubin*' | head -1)
      if [ -n "$f" ]; then cuobjdump -sass "$f" > "$W/sass.txt" 2>&1
        echo "sass $f: HGMMA $(grep -c HGMMA "$W/sass.txt") UTMALDG $(grep -c UTMALDG "$W/sass.txt") USETMAXREG $(grep -c SETMAXREG "$W/sass.txt") LDL $(grep -c 'LDL' "$W/sass.txt")"
      else echo "sass: no cubin found under $TILEPICK_CACHE_DIR"; find "$TILEPICK_CACHE_DIR" | head -5; fi ;;
    ncu)  # Nsight Compute (clocks left alone) on NCU_CONFIG and on cuBLASLt for NCU_PROBLEM
      P=${NCU_PROBLEM:-gemm rcr m4096 n4096 k4096 bf16}
      C=${NCU_CONFIG:-fam=sm90 tile=128x256x64 warps=2x1 stages=3 swz=8 cluster=2x1 epi=smem}
      command -v ncu >/dev/null || { echo "ncu: not found"; continue; }
      timeout 200 ncu --clock-control none --set full -k regex:tp_gemm_sm90 -c 1 -o "$W/ncu_ours" $T verify -p "$P" -c "$C" >"$W/ncu_ours.log" 2>&1
      echo "ncu ours rc=$?"
      ncu -i "$W/ncu_ours.ncu-rep" >"$W/ncu_ours.txt" 2>&1
      # Per SASS instruction: executed count and warp-stall samples by reason (where the kernel waits).
      ncu -i "$W/ncu_ours.ncu-rep" --page source --print-source sass --csv >"$W/ncu_ours_sass.csv" 2>&1
      gzip -f "$W/ncu_ours_sass.csv"; rm -f "$W/ncu_ours.ncu-rep"
      python3 bench/ncu_stalls.py "$W/ncu_ours_sass.csv.gz" > "$W/ncu_stalls.txt" 2>&1; head -3 "$W/ncu_stalls.txt"
      timeout 200 ncu --clock-control none --set full -k 'regex:^(?!tp_)' -c 1 $T vendor check -p "$P" >"$W/ncu_vendor.txt" 2>&1
      echo "ncu vendor rc=$?"
      grep -E "^  [a-zA-Z_].*\(|Duration|Tensor|Issue Slots Busy|Warp Cycles Per Issued|No Eligible|Registers Per|Stall|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy" \
        "$W/ncu_ours.txt" "$W/ncu_vendor.txt" | head -80 ;;
    perf)
      # PERF_GREP: only sm90 configs matching these extended regexps (all of them must match), each
      # paired with every problem of PERF_FILE; default: the whole space.
      if [ -n "${PERF_PAIRS:-}" ]; then  # a 'problem|config' file made beforehand
        timed_sweep perf $(( $(left) - $PERF_LEAVE )) --pairs "$PERF_PAIRS"
      elif [ -n "${PERF_GREP:-}" ]; then
        space_sweep perf gemm_sm90 "${PERF_FILE:-data/problems/sm90_perf.txt}" $PERF_GREP
      else
        timed_sweep perf $(( $(left) - $PERF_LEAVE )) -f "${PERF_FILE:-data/problems/sm90_perf.txt}" ${SWEEP_ARGS:---family sm90}
      fi
      python3 bench/sm90_compare.py "$W/perf.csv.gz" "${COPY_ARG[@]}" > "$W/compare.txt"; grep -v "^replay" "$W/compare.txt" | tail -25 ;;
  esac
done
