"""Probe (docs/selection.md, "Vendor choice"): does weighting the vendor choice's training rows by problem size help?
Re-runs `python -m tilepick.vendor_choice --dry-run` with LightGBM row weights (none, sqrt(flops), log2(flops),
|y| + 0.05) and prints the threshold grid, the grouped-CV and the held-out choice rows. Needs build/eval (the README's
main eval) for the H200 held-out set.

  PYTHONPATH=python python3 bench/vendor_choice_weights.py
"""
