"""Records-based held-out numbers of a models folder's conv models, computed as `tilepick.train` computes a
manifest's "validation" (full selection among the measured configs of every data/sweeps/h200/*_val* file),
so a shipped model compares with a variant's train log on the same records.

usage: PYTHONPATH=python python3 experiments/2026-11-22-conv-variants/heldout_records_eval.py [MODELS_DIR]"""
import glob
import json
import sys
from pathlib import Path

from tilepick import train as T


def main() -> None:
    models = Path(sys.argv[1] if len(sys.argv) > 1 else "models")
    _, df = T.load_rows(sorted(glob.glob("data/sweeps/h200/*_val*.csv.gz")), sorted(glob.glob("data/problems/sweep/*.txt")))
    df = T.add_targets(df)
    for op in ("conv_fwd", "conv_bwd_data", "conv_bwd_weight"):
        d = df[df["op"] == op].reset_index(drop=True)
        summary = T.heldout_summary(models / f"{op}_half_h200", d, T.compute_features(d, "h200"))
        print(op, json.dumps({k: round(v, 4) for k, v in summary.items()}))


if __name__ == "__main__":
    main()
