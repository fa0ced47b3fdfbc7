"""Probe (docs/history.md, "Vendor choice: per problem, the vendor's kernel or the model's pick"): does weighting the vendor choice's training rows by problem size help?
Re-runs `python -m tilepick.vendor_choice --dry-run` with LightGBM row weights (none, sqrt(flops), log2(flops),
|y| + 0.05) and prints the threshold grid, the grouped-CV and the held-out choice rows. Needs build/eval (the README's
main eval) for the H200 held-out set.

  PYTHONPATH=python python3 experiments/2026-11-25-vendor-choice-probe/vendor_choice_weights.py
"""
import contextlib
import io
import sys

import numpy as np

sys.path.insert(0, "python")  # run from the repository root
from tilepick import _core, vendor_choice as vc  # noqa: E402

plain_fit = vc.fit


def weighted(wfn):
    """vendor_choice.fit with row weights wfn(X, y) (None: unweighted)."""
    return lambda X, y, threads: plain_fit(X, y, threads, wfn(X, y))


# weight by the problem's work: 2^log2_flops column
fi = _core.feature_names().index("log2_flops")
for name, wfn in [("none", lambda X,y: None), ("sqrt_flops", lambda X,y: np.sqrt(2.0**X[:,fi])), ("log_flops", lambda X,y: X[:,fi]), ("abs_y", lambda X,y: np.abs(y)+0.05)]:
    vc.fit = weighted(wfn)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        vc.main(["--heldout","build/eval","data/sweeps/h100-graph/vendor_conv_val.csv.gz","--heldout-arch","h200","h100_sxm","--dry-run","--threads","2"])
    print("==", name)
    for l in buf.getvalue().splitlines():
        if l.startswith("threshold") or "choice" in l: print("  ", l[:18], l[l.find("choice"):l.find("(vendor")] if "choice" in l else l[:120])
