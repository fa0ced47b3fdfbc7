"""Pairs for a same-run recheck of the held-out eval (issue 5): per problem, the recorded best configs
(the fastest M, plus any within BAND of the best, at most CAP) and the shipped models' first K choices.
Measured again side by side in one run (`tilepick sweep --pairs ... --repeat 3`), they give an oracle and a
choice timed on the same GPU minutes apart, free of the min-over-noisy-records bias of the sweep files
(docs/history.md, "The misses are real: a same-run recheck"). Output: 'problem|config' lines.

usage: python bench/recheck_pairs.py --records R.csv.gz... [-m 8] [--band 0.05] [--cap 16] [-k 4]
       [--models DIR...] [--ops fwd bwd_data ...] [--problems FILE] [--arch A] --out PAIRS.txt[.gz]
Several --models folders (a candidate beside the shipped one) give the union of their first K; an empty
folder gives the analytic fallback's. --arch: the arch spec the models select for (another device than the
records' one: a transfer check, e.g. h100_sxm with models whose feature_spec.json "serves" it)."""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "python"))
from model_pairs import open_out, ranked  # noqa: E402
from tilepick.records import read_records  # noqa: E402


def recorded_best(records: list[str], m: int, band: float, cap: int) -> dict[str, list[str]]:
    """problem -> its recorded configs, fastest first: the first m plus any within band of the best, at most cap."""
    _, df = read_records(records)
    df = df[(df.status == "ok") & ~df.config.str.startswith("vendor=")]
    best = df.groupby(["problem", "config"]).median_us.min().reset_index().sort_values(["problem", "median_us"])
    out = {}
    for p, g in best.groupby("problem", sort=False):
        t0 = g.median_us.iloc[0]
        keep = [c for i, (c, t) in enumerate(zip(g.config, g.median_us)) if i < m or t <= t0 * (1 + band)]
        out[p] = keep[:cap]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", nargs="+", required=True)
    ap.add_argument("-m", type=int, default=8, help="fastest recorded configs per problem")
    ap.add_argument("--band", type=float, default=0.05, help="also every config within this of the recorded best")
    ap.add_argument("--cap", type=int, default=16, help="most recorded configs per problem")
    ap.add_argument("-k", type=int, default=4, help="the models' first K (dispatch top_k's k)")
    ap.add_argument("--models", nargs="+", default=[str(ROOT.parent / "models")])
    ap.add_argument("--ops", nargs="*", default=[], help="only problems of these ops (gemm, fwd, bwd_data, bwd_weight)")
    ap.add_argument("--problems", help="only the problems listed in this file (one per line)")
    ap.add_argument("--arch", default="h200", help="arch spec the models select for")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    rec = recorded_best(a.records, a.m, a.band, a.cap)
    only = set(Path(a.problems).read_text().splitlines()) if a.problems else None
    problems = sorted(p for p in rec if (not a.ops or p.split()[0] in a.ops) and (only is None or p in only))
    tops = [ranked(problems, m, a.k, ["fast", "full"], a.arch) for m in a.models]
    n = 0
    with open_out(a.out) as f:
        for p in problems:
            if any(top[p][0] != p for top in tops):
                sys.exit(f"recheck_pairs: record problem '{p}' is not canonical")
            for c in dict.fromkeys(rec[p] + [c for top in tops for c in top[p][1:]]):
                f.write(f"{p}|{c}\n")
                n += 1
    print(f"{a.out}: {n} pairs for {len(problems)} problems")


if __name__ == "__main__":
    main()
