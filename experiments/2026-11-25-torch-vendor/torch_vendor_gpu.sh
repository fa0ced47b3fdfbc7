#!/usr/bin/env bash
# tilepick.torch end to end with the vendor decisions of dispatch's heuristic strategy (docs/dispatch.md: GEMM
# models "vendor_first", the conv models' per-problem "vendor_choice") against the same models without them
# (the model's pick everywhere, as before 2026-11-25) and plain torch: bench/torch_e2e.py, bf16 training steps
# (forward + backward), steady state, no first-call runs. Results: $OUT/results.tgz (e2e_MODEL{,_plain}/).
#   BUDGET_S=500 [MODELS="resnet50 convnext_t llama_mlp"] bash experiments/2026-11-25-torch-vendor/torch_vendor_gpu.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
source bench/gpu_session.sh
build_all
python3 -c "import torch, torchvision; print(torch.__version__, torchvision.__version__, torch.backends.cudnn.version())" \
  >"$W/torch_version.txt" 2>&1 || { cat "$W/torch_version.txt"; exit 1; }
plain=/tmp/models_plain
rm -rf "$plain" && cp -r models "$plain"
python3 - "$plain" <<'PY'
import json, pathlib, sys
for spec in pathlib.Path(sys.argv[1]).glob("*/feature_spec.json"):
    s = json.loads(spec.read_text())
    s.pop("vendor_first", None), s.pop("vendor_choice", None)
    spec.write_text(json.dumps(s, indent=1) + "\n")
PY
for m in ${MODELS:-resnet50 convnext_t llama_mlp}; do
  for variant in "" _plain; do
    t=$(( $(left) - 15 )); [ $t -gt 30 ] || break 2
    dir=$PWD/models; modes=torch,tilepick_heuristic
    [ -n "$variant" ] && dir=$plain && modes=tilepick_heuristic
    TILEPICK_MODELS_DIR=$dir timeout $t python3 bench/torch_e2e.py --models $m --modes $modes --no-first-call \
      --out "$W/e2e_$m$variant" >"$W/e2e_$m$variant.log" 2>&1
    echo "e2e $m$variant rc=$? after $(( $(date +%s) - START )) s"; grep -E " ms|x[0-9]" "$W/e2e_$m$variant.log" | tail -4
  done
done
