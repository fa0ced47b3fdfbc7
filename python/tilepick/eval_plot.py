"""Efficiency CDF of `tilepick eval` (reads its eval.csv; `tilepick eval --out DIR` calls this).

    python -m tilepick.eval_plot DIR/eval.csv -o DIR/eval_cdf.png

One panel per op (and all ops): the fraction of problems whose efficiency (oracle_us / chosen_us) is
at most x, for the model's choice, the analytic fallback and the vendor heuristic against its own
best. Curves further right are better.
"""
from __future__ import annotations

import argparse
import csv
import sys

OP_ORDER = ("gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight")
SERIES = (
    ("efficiency", "model (or its fallback)", "C0"),
    ("fallback_efficiency", "analytic fallback", "C1"),
    ("vendor_efficiency_own", "vendor heuristic vs its best", "C2"),
)


def read_rows(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def values(rows: list[dict], column: str) -> list[float]:
    return sorted(float(r[column]) for r in rows if r.get(column, "") != "")


def plot(rows: list[dict], out: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ops = [op for op in OP_ORDER if any(r["op"] == op for r in rows)]
    ops += sorted({r["op"] for r in rows} - set(ops))
    panels = [("all ops", rows)] + [(op, [r for r in rows if r["op"] == op]) for op in ops]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.6), squeeze=False)
    for ax, (title, subset) in zip(axes[0], panels):
        for column, label, color in SERIES:
            v = values(subset, column)
            if not v:
                continue
            y = [(i + 1) / len(v) for i in range(len(v))]
            mean = sum(v) / len(v)
            ax.step(v, y, where="post", color=color, label=f"{label} (mean {100 * mean:.1f}%)")
        ax.set_title(f"{title} ({len(subset)} problems)")
        ax.set_xlabel("efficiency = oracle / chosen time")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    axes[0][0].set_ylabel("fraction of problems <= x")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="eval.csv written by tilepick eval")
    ap.add_argument("-o", "--out", default="eval_cdf.png", help="PNG to write")
    a = ap.parse_args(argv)
    rows = read_rows(a.csv)
    if not rows:
        print(f"eval_plot: {a.csv} has no problems", file=sys.stderr)
        return 1
    plot(rows, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
