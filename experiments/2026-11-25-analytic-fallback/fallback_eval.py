"""The analytic fallback's first choice against the fastest measured config of each problem. By default it
chooses among the measured configs (records with every legal config measured, such as
data/sweeps/h200/gemm_train_full.csv.gz, give its whole-pool efficiency; sampled records only bound it from
above). --whole-pool: it chooses over the whole legal pool, as selection does, and the choice must be among
the records (experiments/2026-11-25-analytic-fallback/fallback_pairs.py lists them); that choice is the selector's own (`_core.selector_rank` with no
models). --roofline: also the fallback before 2026-11-25 (the smallest roofline estimate, the est_time_us feature).
Among given configs, ties go to the smaller config string, as in the selector.

  PYTHONPATH=python python3 experiments/2026-11-25-analytic-fallback/fallback_eval.py RECORDS.csv.gz... [--arch A] [--whole-pool] [--roofline] [--worst 5]
      [--family dw --min-configs 8]   (among the measured configs of one family, problems with at least 8 of them)
"""
import argparse
import sys
from collections import defaultdict

import numpy as np

from tilepick import _core
from tilepick.records import read_records


NO_MODELS = "/nonexistent/tilepick-models"  # a selector over no models ranks with the analytic fallback


def first(configs: list[str], scores: np.ndarray) -> str:
    """The best-scored config, ties by config string (NaN never wins)."""
    s = np.where(np.isnan(scores), -np.inf, scores)
    return min(c for c, v in zip(configs, s) if v == s.max())


def fallback_choice(problem: str, arch: str) -> str:
    """The selector's first choice over the whole legal pool with no model: what dispatch runs there."""
    return _core.selector_rank(problem, arch, NO_MODELS, "full", 1)[0][0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("records", nargs="+")
    ap.add_argument("--arch", default="")
    ap.add_argument("--whole-pool", action="store_true")
    ap.add_argument("--roofline", action="store_true")
    ap.add_argument("--worst", type=int, default=0, help="print the N worst problems of the current fallback")
    ap.add_argument("--family", help="only the records of configs of this family (sm80, dw)")
    ap.add_argument("--min-configs", type=int, default=1, help="only problems with at least this many measured configs")
    a = ap.parse_args()
    header, df = read_records(a.records)
    arch = a.arch or (header.get("devices") or [{}])[0].get("arch", "h200")
    df = df[(df.status == "ok") & ~df.config.str.startswith("vendor=")]
    if a.family:
        df = df[df.config.str.startswith(f"fam={a.family} ")]
    times = df.groupby(["problem", "config"]).median_us.min()
    counts = times.groupby(level=0).size()
    times = times[times.index.get_level_values(0).isin(counts[counts >= a.min_configs].index)]
    est = list(_core.feature_names()).index("est_time_us")
    rules = {"fallback": (lambda p, pool: fallback_choice(p, arch)) if a.whole_pool else
             (lambda p, pool: first(pool, np.asarray(_core.heuristic_scores(p, pool, arch))))}
    if a.roofline:
        rules["roofline"] = lambda p, pool: first(
            pool, -_core.features_batch([p] * len(pool), pool, arch, 1)[:, est])
    eff, missing, worst = defaultdict(lambda: defaultdict(list)), defaultdict(int), []
    for p, t in times.groupby(level=0):
        t = t.droplevel(0)
        pool = list(_core.legal_configs(p, arch)) if a.whole_pool else list(t.index)
        op = p.split()[0] + (" " + next(w for w in p.split() if not w.startswith("ep=") and not w[0] in "mnk" and
                                       w not in ("gemm", "rrr", "rcr", "crr", "ccr", "rrc", "rcc", "crc", "ccc"))
                             if p.startswith("gemm") else "")
        for name, rule in rules.items():
            pick = rule(p, pool)
            if pick not in t.index:
                missing[name] += 1
                continue
            e = t.min() / t[pick]
            eff[name][op].append(e)
            eff[name]["all"].append(e)
            if name == "fallback":
                worst.append((e, p, pick))
    print(f"arch {arch}, {len(times)} records of {times.index.get_level_values(0).nunique()} problems, "
          f"{'whole legal pool' if a.whole_pool else 'measured configs'}; mean / median / p10 / min (n)")
    for name in rules:
        for op, e in sorted(eff[name].items()):
            e = np.array(e)
            print(f"  {name:9s} {op:18s} {e.mean():.3f} / {np.median(e):.3f} / {np.quantile(e, .1):.3f} / {e.min():.3f} "
                  f"({len(e)})")
        if missing[name]:
            print(f"  {name:9s} first choice not measured on {missing[name]} problems")
    for e, p, c in sorted(worst)[:a.worst]:
        print(f"  {e:.3f} {p} | {c}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
