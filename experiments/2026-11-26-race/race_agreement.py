#!/usr/bin/env python3
"""How dispatch's race (or top_k, k=1) strategy decided on the device (experiments/2026-11-26-race/race_gpu.sh, experiments/2026-11-26-race/race_cost_gpu.sh)
against the committed records.

For every plan (the JSON of `tilepick plan --strategy race --json`): which side won (our first choice or the
vendor's heuristic kernel; for top_k the fastest of the vendor's heuristic kernel and its best algorithm, the
records' vendor_best_us), whether the records (`tilepick eval`'s eval.csv over the README's held-out files) call
the same side faster, what the winner costs in the records against the fastest kernel known there, and the
plan's time (selection, compiling our kernel, checking and timing both).

  PYTHONPATH=python python3 experiments/2026-11-26-race/race_agreement.py --plans DIR_OF_JSON --eval build/eval/eval.csv
"""
import argparse
import glob
import json

import numpy as np
import pandas as pd


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--plans", required=True, help="folder of the race plans' JSON files")
    ap.add_argument("--eval", required=True, help="eval.csv of `tilepick eval` over the same problems' records")
    a = ap.parse_args()
    plans = [p for f in sorted(glob.glob(f"{a.plans}/*.json")) for p in json.load(open(f))]
    rows = []
    for p in plans:
        timed = {c["vendor"]: c.get("time_us", np.nan) for c in p["candidates"] if c.get("status") == "ok"}
        rows.append({"problem": p["problem"], "vendor_won": p["vendor"], "plan_s": p["plan_seconds"],
                     "top_k": p["strategy"] == "top_k",
                     "race_ours_us": timed.get(False, np.nan), "race_vendor_us": timed.get(True, np.nan)})
    r = pd.DataFrame(rows).merge(pd.read_csv(a.eval), on="problem", how="left")
    r = r[r["dispatch_efficiency"].notna()]
    ours = r["own_first_us"]
    vend = r["vendor_best_us"].where(r["top_k"], r["vendor_heur_us"]).where(lambda v: v > 0)
    r["records_vendor_faster"] = vend < ours
    r["agree"] = r["records_vendor_faster"] == r["vendor_won"]
    r["ran_us"] = np.where(r["vendor_won"], vend, ours)
    r["ran_eff"] = r["best_known_us"] / r["ran_us"]
    r["loss"] = r["ran_us"] / np.minimum(ours, vend.fillna(np.inf)) - 1  # against the faster side in the records
    print(f"{len(r)} plans with records (of {len(plans)}); device timing vs records: ours x"
          f"{np.nanmedian(r['race_ours_us'] / ours):.3f}, vendor x{np.nanmedian(r['race_vendor_us'] / vend):.3f} (median)")
    for op, g in r.groupby("op"):
        e = g["ran_eff"]
        print(f"{op:16s} n={len(g):3d} vendor won {g['vendor_won'].mean():5.1%}  same side as the records "
              f"{g['agree'].mean():5.1%}  where not: the records' slower side by median "
              f"{g.loc[~g['agree'], 'loss'].median() if (~g['agree']).any() else 0:.1%}  |  what ran, records vs best known: "
              f"{100 * e.mean():.1f} / {100 * e.quantile(0.1):.1f} / {100 * e.min():.1f} (heuristic strategy "
              f"{100 * g['dispatch_efficiency'].mean():.1f} / {100 * g['dispatch_efficiency'].quantile(0.1):.1f} / "
              f"{100 * g['dispatch_efficiency'].min():.1f})  |  plan s median {g['plan_s'].median():.2f}, max {g['plan_s'].max():.2f}")
    worst = r.sort_values("loss", ascending=False).head(5)
    print("largest losses against the records' faster side:")
    for _, w in worst.iterrows():
        print(f"  {w['loss']:6.1%} {w['problem']}: race ours {w['race_ours_us']:.1f} vendor {w['race_vendor_us']:.1f} us; "
              f"records ours {w['own_first_us']:.1f} vendor {w['vendor_heur_us']:.1f} us")


if __name__ == "__main__":
    main()
