"""Packed-group alignment (v6): each config of a sweep run twice, at align=4x4x4 (one group's channels) and at
align=auto (the packed run's wider alignment); prints the geomean time ratio narrow / wide per problem and the
best time of each side next to cuDNN's best.  Usage: align_gain.py gd.csv.gz"""
import sys
import numpy as np
import pandas as pd

d = pd.read_csv(sys.argv[1], comment="#")
d = d[d.status == "ok"]
ours = d[d.config.str.startswith("fam=")].copy()
print(ours.config.str.extract(r"(align=\S+)")[0].value_counts().to_string())
ours["wide"] = ~ours.config.str.contains("align=4x4x4")
ours["base"] = ours.config.str.replace(r"align=\S+", "", regex=True)
pairs = ours.pivot_table(index=["problem", "base"], columns="wide", values="median_us").dropna()
pairs["ratio"] = pairs[False] / pairs[True]
print("\ngeomean narrow / wide time over the same configs:")
print(pairs.groupby(level=0).ratio.agg(lambda x: np.exp(np.log(x).mean())).to_string())
best = ours.groupby(["problem", "wide"]).median_us.min().unstack()
best["gain"] = best[False] / best[True]
best["cudnn_best"] = d[~d.config.str.startswith("fam=")].groupby("problem").median_us.min()
print("\nbest us (False: align=4x4x4, True: widened):")
print(best.to_string())
