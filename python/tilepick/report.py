"""Sweep report: per-problem oracle vs vendor, per-family speedups, roofline, plots.

    python -m tilepick.report RECORDS... --out DIR [--problems-file F] [--arch NAME|JSON]

Writes DIR/report.csv (one row per problem), DIR/summary.csv (one row per shape family, per op and
overall), DIR/speedup_vs_vendor.png and DIR/roofline.png, and prints a short summary.
Speedups are vendor time / oracle time (> 1: the best tilepick config beats the vendor).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from tilepick.records import device_of, oracle, problem_fields, problem_key, read_problem_tags, read_records

PEAK_KEY = {"f16": "peak_f16", "bf16": "peak_bf16", "f32": "peak_tf32", "e4m3": "peak_fp8", "e5m2": "peak_fp8"}
GEMM_BUCKETS = ((16, "tiny"), (256, "small"), (2048, "medium"), (None, "large"))
OP_ORDER = ("gemm", "conv_fwd", "conv_bwd_data", "conv_bwd_weight", "unknown")


# ----------------------------------------------------------------------------- shape families

def shape_family(problem: str) -> tuple[str, str, str]:
    """(op, kind, filter): conv kind dense | grouped | depthwise, filter 1x1 | 3x3 | 7x7 (3-D: 3x3x3 ...)
    | other; GEMM kind tiny (M <= 16) | small (<= 256) | medium (<= 2048) | large, filter ''."""
    f = problem_fields(problem)
    op = f["op"]
    if op == "unknown":
        return op, "unknown", ""
    if op == "gemm":
        m = f["m"] or 0
        return op, next(name for limit, name in GEMM_BUCKETS if limit is None or m <= limit), ""
    g, c, k = f["g"], f["ic"], f["oc"]
    kind = "dense" if g == 1 else ("depthwise" if c == g and k == g else "grouped")
    dims = [f["kd"], f["kh"], f["kw"]] if f["ndim"] == 3 else [f["kh"], f["kw"]]
    square = len(set(dims)) == 1 and dims[0] in (1, 3, 7)
    return op, kind, ("x".join(str(d) for d in dims) if square else "other")


def family_label(op: str, kind: str, filt: str) -> str:
    return " ".join(x for x in (op, kind, filt) if x)


# ----------------------------------------------------------------------------- device roofs

def data_dir() -> Path:
    return Path(os.environ.get("TILEPICK_DATA_DIR") or Path(__file__).resolve().parents[2] / "data")


def load_arch(arg: str) -> dict:
    """An arch spec from a JSON path or a name in data/arch/."""
    path = Path(arg)
    if not path.is_file():
        path = data_dir() / "arch" / f"{arg}.json"
    if not path.is_file():
        names = sorted(Path(p).stem for p in glob.glob(str(data_dir() / "arch" / "*.json")))
        raise ValueError(f"--arch {arg}: no such file or arch spec in {data_dir() / 'arch'}; have {', '.join(names)}")
    with open(path) as f:
        return json.load(f)


def device_roofs(header: dict, arch_arg: str | None = None) -> dict | None:
    """{'source', 'mem_bw_gbps', 'peak_<dtype>'...}: --arch if given; else peaks in the header's device
    block, filled from the data/arch spec the C++ arch matcher picks for the device (compute capability, the
    longest name match, peaks scaled by the live / spec SM count). None if unknown."""
    if arch_arg:
        spec = load_arch(arch_arg)
        return dict(spec, source=f"--arch {arch_arg}")
    dev = device_of(header)
    roofs = {k: v for k, v in dev.items() if k == "mem_bw_gbps" or k.startswith("peak_")}
    sources = ["sweep header"] if roofs else []
    if "mem_bw_gbps" not in roofs or not any(k.startswith("peak_") for k in roofs):
        spec = _match_spec(dev)
        if spec:
            for k, v in spec.items():
                if (k == "mem_bw_gbps" or k.startswith("peak_")) and k not in roofs and v:
                    roofs[k] = v
            sources.append(f"data/arch/{spec['name']}.json")
    if "mem_bw_gbps" not in roofs or not any(k.startswith("peak_") for k in roofs):
        return None
    roofs["source"] = " + ".join(sources)
    return roofs


def _match_spec(dev: dict) -> dict | None:
    """_core.match_arch for a header's device block ("cc": "9.0", or cc_major / cc_minor); None without one."""
    from tilepick import _core

    cc = str(dev.get("cc", ""))
    if re.fullmatch(r"\d+\.\d+", cc):
        major, minor = (int(x) for x in cc.split("."))
    elif "cc_major" in dev:
        major, minor = int(dev["cc_major"]), int(dev.get("cc_minor", 0))
    else:
        return None
    try:
        return _core.match_arch(str(dev.get("name", "")), major, minor, int(dev.get("sm_count") or 0))
    except ValueError:
        return None


# ----------------------------------------------------------------------------- tables

def build_report(df: pd.DataFrame, roofs: dict | None, tags: dict | None = None) -> pd.DataFrame:
    """One row per problem; see the module docstring and docs in the column names."""
    per = oracle(df).reset_index()
    fam = [shape_family(p) for p in per["problem"]]
    per.insert(0, "tag", [(tags or {}).get(problem_key(p), "") for p in per["problem"]])
    per.insert(2, "family", [family_label(*f) for f in fam])
    per["speedup_vs_best"] = per["vendor_best_us"] / per["oracle_us"]
    per["speedup_vs_heur"] = per["vendor_heur_us"] / per["oracle_us"]
    per["intensity"] = per["flops"] / per["bytes"]  # flop per byte of the minimum traffic
    dtypes = [problem_fields(p)["dtypes"] for p in per["problem"]]
    per["dtype"] = [d[0] if d else "" for d in dtypes]
    if roofs:
        peak = np.array([float(roofs.get(PEAK_KEY.get(d, ""), np.nan)) for d in per["dtype"]])
        memory_roof = per["intensity"].to_numpy() * float(roofs["mem_bw_gbps"]) / 1e3  # TFLOPS
        per["roof_tflops"] = np.minimum(peak, memory_roof)  # NaN when either is unknown
        per["bound"] = np.where(np.isnan(peak) | np.isnan(memory_roof), "",
                                np.where(memory_roof < peak, "memory", "compute"))
    else:
        per["roof_tflops"], per["bound"] = np.nan, ""
    per["roofline_frac"] = per["oracle_tflops"] / per["roof_tflops"]
    order = {op: i for i, op in enumerate(OP_ORDER)}
    per["_op"] = per["op"].map(order)
    per = per.sort_values(["_op", "family"], kind="stable").drop(columns="_op")
    cols = ["tag", "op", "family", "problem", "dtype", "oracle_config", "oracle_us", "vendor_heur",
            "vendor_heur_algo", "vendor_heur_us", "vendor_best", "vendor_best_algo", "vendor_best_us",
            "speedup_vs_best", "speedup_vs_heur", "oracle_tflops", "oracle_gbps", "intensity", "roof_tflops",
            "roofline_frac", "bound", "flops", "bytes", "n_configs", "n_ok", "n_failed", "n_wrong", "n_crash",
            "n_timeout", "n_error", "n_unsupported"]
    return per[cols].reset_index(drop=True)


def geomean(x: pd.Series) -> float:
    x = x[np.isfinite(x) & (x > 0)]
    return float(np.exp(np.log(x).mean())) if len(x) else np.nan


def summarize(report: pd.DataFrame) -> pd.DataFrame:
    """Per family, then per op ('<op> all') and overall ('all'): counts and geomean speedups."""
    groups = [(f, report[report["family"] == f]) for f in pd.unique(report["family"])]
    groups += [(f"{op} all", report[report["op"] == op]) for op in pd.unique(report["op"])]
    groups.append(("all", report))
    rows = []
    for label, r in groups:
        vb, vh = r["speedup_vs_best"].dropna(), r["speedup_vs_heur"].dropna()
        fr = r["roofline_frac"].dropna()
        rows.append({
            "family": label, "op": r["op"].iloc[0] if r["op"].nunique() == 1 else "all",
            "n_problems": len(r), "n_oracle": int(r["oracle_us"].notna().sum()),
            "n_vs_best": len(vb), "geomean_vs_best": geomean(vb),
            "min_vs_best": vb.min() if len(vb) else np.nan, "max_vs_best": vb.max() if len(vb) else np.nan,
            "wins_vs_best": int((vb > 1).sum()),
            "n_vs_heur": len(vh), "geomean_vs_heur": geomean(vh), "wins_vs_heur": int((vh > 1).sum()),
            "median_roofline_frac": fr.median() if len(fr) else np.nan,
            "n_ok": int(r["n_ok"].sum()), "n_failed": int(r["n_failed"].sum()),
        })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- plots

def plot_speedups(report: pd.DataFrame, path: Path) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
    fams = [f for f in pd.unique(report["family"])
            if report.loc[report["family"] == f, ["speedup_vs_best", "speedup_vs_heur"]].notna().any(axis=None)]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(fams) + 2), 5))
    rng = np.random.default_rng(0)
    for col, shift, color, label in (("speedup_vs_best", -0.18, "tab:blue", "vs vendor best"),
                                     ("speedup_vs_heur", 0.18, "tab:orange", "vs vendor heuristic")):
        data = [report.loc[report["family"] == f, col].dropna().to_numpy() for f in fams]
        pos = np.arange(len(fams)) + shift
        keep = [i for i, d in enumerate(data) if len(d)]
        if keep:
            ax.boxplot([data[i] for i in keep], positions=pos[keep], widths=0.3, showfliers=False,
                       medianprops={"color": color})
        for i in keep:
            ax.scatter(pos[i] + rng.uniform(-0.08, 0.08, len(data[i])), data[i], s=10, color=color, alpha=0.7,
                       label=label if i == keep[0] else None)
    ax.axhline(1.0, color="gray", lw=1, ls="--")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}x" if f"{v:g}".lstrip("0.")[:1] in "25" else ""))
    ax.set_xticks(np.arange(len(fams)))
    ax.set_xticklabels(fams, rotation=35, ha="right", fontsize=8)
    ax.set_ylabel("speedup of the oracle config (vendor time / tilepick time)")
    ax.set_title("oracle vs vendor per shape family")
    if fams:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_roofline(report: pd.DataFrame, roofs: dict | None, path: Path) -> None:
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5))
    pts = report[(report["oracle_tflops"] > 0) & (report["intensity"] > 0)]
    for op, r in pts.groupby("op", sort=False):
        ax.scatter(r["intensity"], r["oracle_tflops"], s=14, label=op, alpha=0.8)
    if roofs and len(pts):
        lo, hi = pts["intensity"].min() / 2, pts["intensity"].max() * 2
        x = np.geomspace(min(lo, 1.0), max(hi, 1e4), 200)
        bw = float(roofs["mem_bw_gbps"]) / 1e3
        for dt in sorted(set(pts["dtype"])):
            peak = roofs.get(PEAK_KEY.get(dt, ""))
            if peak:
                ax.plot(x, np.minimum(float(peak), x * bw), lw=1, ls="--", label=f"roof {dt} ({peak:g} TFLOPS)")
        ax.set_title(f"oracle configs on the roofline ({roofs.get('source', '')}, {roofs['mem_bw_gbps']:g} GB/s)",
                     fontsize=9)
    else:
        ax.set_title("oracle configs (no device roofs known)", fontsize=9)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop / minimum byte)")
    ax.set_ylabel("TFLOPS")
    if len(pts):
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- command line

def _fmt(x: float, spec: str = ".2f") -> str:
    return "-" if x is None or not np.isfinite(x) else format(x, spec)


def print_summary(header: dict, df: pd.DataFrame, report: pd.DataFrame, summary: pd.DataFrame,
                  roofs: dict | None, out: Path, file=None) -> None:
    file = file or sys.stdout
    dev = device_of(header).get("name", "?")
    print(f"{len(df)} records from {len(header.get('record_files', []))} file(s), device {dev}; "
          f"{len(report)} problems, {int(report['oracle_us'].notna().sum())} with an ok config; "
          f"roofs: {roofs['source'] if roofs else 'unknown'}", file=file)
    print(f"{'family':<32}{'n':>6}{'vs best':>10}{'vs heur':>10}{'wins':>12}{'roof':>7}", file=file)
    for _, r in summary.iterrows():
        print(f"{r['family']:<32}{r['n_problems']:>6}{_fmt(r['geomean_vs_best']):>10}{_fmt(r['geomean_vs_heur']):>10}"
              f"{str(r['wins_vs_best']) + '/' + str(r['n_vs_best']):>12}{_fmt(r['median_roofline_frac']):>7}",
              file=file)
    print(f"(geomean speedups of the oracle config, vendor time / tilepick time; roof = median fraction of "
          f"the roofline)\nwrote {out}/report.csv, summary.csv, speedup_vs_vendor.png, roofline.png", file=file)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="tilepick report", description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", help="sweep record files (*.csv.gz) of one device")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--problems-file", help="problems file whose `name:` tags label the problems")
    ap.add_argument("--arch", help="arch spec name (data/arch/NAME.json) or JSON path for the roofs; "
                                   "default: the header's device block, matched to data/arch by name")
    args = ap.parse_args(argv)
    import matplotlib
    matplotlib.use("Agg")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            header, df = read_records(args.records)
            roofs = device_roofs(header, args.arch)
            tags = read_problem_tags(args.problems_file) if args.problems_file else None
        except (OSError, ValueError) as e:
            print(f"tilepick report: error: {e}", file=sys.stderr)
            return 1
    for w in caught:
        print(f"tilepick report: warning: {w.message}", file=sys.stderr)
    if df.empty:
        print("tilepick report: error: the record files hold no rows", file=sys.stderr)
        return 1
    if roofs is None:
        print("tilepick report: warning: no peak / bandwidth numbers for the device; give --arch", file=sys.stderr)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = build_report(df, roofs, tags)
    summary = summarize(report)
    report.to_csv(out / "report.csv", index=False, float_format="%.6g")
    summary.to_csv(out / "summary.csv", index=False, float_format="%.6g")
    plot_speedups(report, out / "speedup_vs_vendor.png")
    plot_roofline(report, roofs, out / "roofline.png")
    print_summary(header, df, report, summary, roofs, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
