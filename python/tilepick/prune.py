"""Learned pool pruning: python -m tilepick.prune RECORDS... --out models/

From training sweep records (never held-out ones), derives per model (op, dtype family, arch) a
"covering set" of kernel configs: a greedy set cover in which every training problem keeps at least
`--redundancy` configs (or all it has, when fewer) within `--tol` of its measured oracle. The
selector (src/select/selector.cpp) then scores only the legal configs in that set.

Written as models/<op>_<family>_<arch>/candidates.txt: '#' header lines saying how it was made,
then one config string per line, with align=auto (the registry's form; records hold the align
resolved for their problem). Also prints a grouped cross-validation of the pruning: covering sets
built without one fold of whole networks, and, on that fold's problems, the best measured config in
the set against the best measured config overall.

Needs only numpy and pandas (no tilepick C++ bindings).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from tilepick import records as rec
from tilepick.train import FOLDS, cv_group, dtype_family, fold_of

_ALIGN = re.compile(r"\balign=\S+")


def pool_config(config: str) -> str:
    """The registry's form of a record's config: align resolved for a problem -> align=auto."""
    return _ALIGN.sub("align=auto", config) if "fam=sm80" in config else config


def load(paths: list[str], problem_files: list[str]) -> pd.DataFrame:
    """ok, non-vendor rows with op, family, group and the pool form of the config."""
    if any("_val" in Path(p).name for p in paths):
        raise SystemExit("prune: refusing held-out records (file name contains '_val'): " + " ".join(paths))
    _, df = rec.read_records(paths)
    df = df[(~df["is_vendor"]) & (df["status"] == "ok") & (~df["config"].str.startswith("fault="))]
    df = df[np.isfinite(df["median_us"]) & (df["median_us"] > 0)]
    tags = {}
    for f in problem_files:
        tags.update(rec.read_problem_tags(f))
    problems = df["problem"].unique()
    op = {p: rec.problem_op(p) for p in problems}
    family = {p: dtype_family(p) for p in problems}
    group = {p: cv_group(p, tags.get(rec.problem_key(p))) for p in problems}
    df = df.assign(op=df["problem"].map(op), family=df["problem"].map(family), group=df["problem"].map(group),
                   pool=df["config"].map(pool_config))
    # one time per (problem, pool config): the fastest of repeated or differently aligned rows
    return df.groupby(["op", "family", "group", "problem", "pool"], as_index=False, sort=False)["median_us"].min()


def near_oracle(df: pd.DataFrame, tol: float) -> dict[str, dict[str, float]]:
    """problem -> {pool config: oracle_us / us} for the configs within `tol` of the problem's oracle."""
    best = df.groupby("problem")["median_us"].transform("min")
    eff = best / df["median_us"]
    keep = df[eff >= 1 / (1 + tol)].assign(eff=eff)
    out: dict[str, dict[str, float]] = {}
    for p, c, e in zip(keep["problem"], keep["pool"], keep["eff"]):
        out.setdefault(p, {})[c] = float(e)
    return out


def greedy_cover(near: dict[str, dict[str, float]], redundancy: int) -> list[str]:
    """Configs in pick order until every problem has min(redundancy, its near-oracle count) of them.
    Each step takes the config that serves the most unsatisfied problems (ties: higher summed
    efficiency there, then the config string), so the result is deterministic."""
    need = {p: min(redundancy, len(cs)) for p, cs in near.items()}
    serves: dict[str, dict[str, float]] = {}
    for p, cs in near.items():
        for c, e in cs.items():
            serves.setdefault(c, {})[p] = e
    chosen: list[str] = []
    while any(need.values()):
        def gain(c):
            open_ = [p for p in serves[c] if need[p] > 0]
            return (len(open_), sum(serves[c][p] for p in open_))
        best = max((c for c in serves if c not in chosen), key=lambda c: (*gain(c), _neg(c)))
        chosen.append(best)
        for p in serves[best]:
            need[p] = max(0, need[p] - 1)
    return chosen


def _neg(s: str):
    """Sort key that makes max() prefer the smaller string."""
    return tuple(-ord(ch) for ch in s)


def covered_efficiency(df: pd.DataFrame, cover: set[str]) -> pd.DataFrame:
    """Per problem: best measured time in `cover` against the best measured overall (the selector's
    fallback, the whole pool, when no measured config is in the set: efficiency 1, flagged)."""
    rows = []
    for p, part in df.groupby("problem", sort=False):
        best = part["median_us"].min()
        inside = part[part["pool"].isin(cover)]
        rows.append({"problem": p, "measured": len(part), "in_set": len(inside), "empty": inside.empty,
                     "eff": 1.0 if inside.empty else best / inside["median_us"].min()})
    return pd.DataFrame(rows)


def summary(e: pd.DataFrame) -> dict:
    x = e["eff"].to_numpy()
    return {"problems": int(len(x)), "mean": float(x.mean()), "p10": float(np.quantile(x, 0.10)),
            "min": float(x.min()), "empty": int(e["empty"].sum()), "in_set_mean": float(e["in_set"].mean()),
            "measured_mean": float(e["measured"].mean())}


def cross_validate(df: pd.DataFrame, tol: float, redundancy: int) -> dict:
    per_problem = df.drop_duplicates("problem").set_index("problem")["group"]  # folds balanced by problems
    assign = dict(zip(per_problem.to_numpy(), fold_of(per_problem)))
    fold = df["group"].map(assign)
    parts = []
    for f in range(FOLDS):
        train, test = df[fold != f], df[fold == f]
        if test.empty or train.empty:
            continue
        cover = set(greedy_cover(near_oracle(train, tol), redundancy))
        parts.append(covered_efficiency(test, cover).assign(cover=len(cover)))
    e = pd.concat(parts)
    s = summary(e)
    s["cover_mean"] = float(e.drop_duplicates("cover")["cover"].mean())
    return s


def fmt(s: dict) -> str:
    return (f"{s['problems']} problems: mean {100 * s['mean']:.2f}% p10 {100 * s['p10']:.2f}% min {100 * s['min']:.2f}%, "
            f"{s['in_set_mean']:.1f} of {s['measured_mean']:.1f} measured configs in the set, "
            f"{s['empty']} with none")


def write(path: Path, configs: list[str], header: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"# {h}" for h in header] + configs
    path.write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilepick.prune", description=__doc__.split("\n")[0])
    ap.add_argument("records", nargs="+", help="training record files (.csv.gz); *_val* files are refused")
    ap.add_argument("--problems-file", nargs="*", default=[], help="problem files with name: tags (CV groups)")
    ap.add_argument("--out", default="models", help="models directory (candidates.txt goes into each model folder)")
    ap.add_argument("--arch", default="h200", help="arch name of the model folders")
    ap.add_argument("--tol", type=float, default=0.03, help="near-oracle band: us <= oracle_us * (1 + tol)")
    ap.add_argument("--redundancy", type=int, default=3, help="near-oracle configs each training problem keeps")
    ap.add_argument("--only", nargs="*", default=[], help="only these model names (e.g. gemm_half_h200)")
    ap.add_argument("--no-cv", action="store_true", help="skip the grouped cross-validation")
    ap.add_argument("--dry-run", action="store_true", help="print, write nothing")
    args = ap.parse_args(argv)

    df = load(args.records, args.problems_file)
    for (op, family), part in df.groupby(["op", "family"]):
        name = f"{op}_{family}_{args.arch}"
        if args.only and name not in args.only:
            continue
        cover = greedy_cover(near_oracle(part, args.tol), args.redundancy)
        train = summary(covered_efficiency(part, set(cover)))
        print(f"{name}: {len(cover)} configs cover {part['problem'].nunique()} problems "
              f"({part['pool'].nunique()} distinct configs measured)")
        print(f"  in-sample: {fmt(train)}")
        cv = None
        if not args.no_cv:
            cv = cross_validate(part, args.tol, args.redundancy)
            print(f"  grouped {FOLDS}-fold CV (sets of ~{cv['cover_mean']:.0f}): {fmt(cv)}")
        if args.dry_run:
            continue
        header = [
            f"tilepick pool pruning for {name}: the selector scores only the legal configs listed here",
            f"made by: python -m tilepick.prune --tol {args.tol} --redundancy {args.redundancy} "
            + " ".join(args.records) + (" --problems-file " + " ".join(args.problems_file) if args.problems_file else ""),
            f"rule: greedy set cover; each of {part['problem'].nunique()} training problems keeps "
            f"min({args.redundancy}, its count) configs within {100 * args.tol:g}% of its measured oracle",
            f"{len(cover)} configs; in-sample: {fmt(train)}",
        ]
        if cv:
            header.append(f"grouped {FOLDS}-fold CV of the rule: {fmt(cv)}")
        header.append(f"date {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')}")
        write(Path(args.out) / name / "candidates.txt", cover, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
