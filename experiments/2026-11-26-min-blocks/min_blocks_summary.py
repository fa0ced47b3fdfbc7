#!/usr/bin/env python3
"""Summary of experiments/2026-11-26-min-blocks/min_blocks_gpu.sh: the patched build's times against the faster of the two baseline passes.

  PYTHONPATH=python python3 experiments/2026-11-26-min-blocks/min_blocks_summary.py bench/results/2026-11-26-min-blocks
"""
import sys

import numpy as np
import pandas as pd

from tilepick import records as rec


def geomean(x) -> float:
    return float(np.exp(np.log(x).mean()))


def main(folder: str) -> None:
    runs = {}
    for name in ("base1", "min_blocks", "base2"):
        _, d = rec.read_records([f"{folder}/{name}.csv.gz"])
        runs[name] = d[d["status"] == "ok"].set_index(["problem", "config"])
    b1, mb, b2 = runs["base1"], runs["min_blocks"], runs["base2"]
    j = pd.DataFrame({"b1": b1.median_us, "b2": b2.median_us, "mb": mb.median_us, "regs_b": b1.registers,
                      "regs_m": mb.registers, "spill_b": b1.spills, "spill_m": mb.spills}).dropna()
    j["base"] = np.minimum(j.b1, j.b2)
    j["r"] = j.mb / j.base
    noise = np.abs(np.log(j.b1 / j.b2))
    print(f"pairs {len(j)}; the two baseline passes differ by {100 * noise.median():.1f}% (median), "
          f"{100 * noise.quantile(0.9):.1f}% (P90)")
    changed = j[j.regs_b != j.regs_m]
    print(f"kernels the bound changed: {len(changed)}; patched / baseline time, geomean {geomean(changed.r):.3f}, "
          f"faster by >3%: {(changed.r < 0.97).sum()}, slower by >3%: {(changed.r > 1.03).sum()}")
    for label, part in (("without spills", changed[changed.spill_m == 0]), ("with spills", changed[changed.spill_m > 0])):
        print(f"  {label}: {len(part)} kernels, geomean {geomean(part.r):.3f}, faster by >3%: {(part.r < 0.97).sum()}, "
              f"slower by >3%: {(part.r > 1.03).sum()}, range {part.r.min():.2f}-{part.r.max():.2f}")
    j["no_spill_policy"] = np.where(j.spill_m == 0, j.mb, j.base)
    per = j.reset_index().groupby("problem").agg(base=("base", "min"), bound=("mb", "min"), policy=("no_spill_policy", "min"))
    for col, label in (("bound", "the bound everywhere"), ("policy", "the bound where it adds no spill")):
        r = per[col] / per.base
        print(f"fastest measured config per problem ({len(per)}), {label}: geomean {geomean(r):.3f}, "
              f"faster by >3%: {(r < 0.97).sum()}, slower by >3%: {(r > 1.03).sum()}")
    g = j.reset_index()
    print(g[g.problem.str.startswith("gemm")][["problem", "config", "b1", "b2", "mb", "regs_b", "regs_m"]].to_string(index=False))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/results/2026-11-26-min-blocks")
