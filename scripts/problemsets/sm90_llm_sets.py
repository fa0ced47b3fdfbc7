#!/usr/bin/env python3
"""The fam=sm90 LLM benchmark sets: the distinct GEMMs of data/problems/gemm_llm_train.txt by token count T
(issue classes: T >= 2048, 128 <= T <= 1024, T <= 64), one line per distinct problem (the first name that has it);
and the fp8 set: the T >= 2048 forward layers (layout rcr, the only one fp8 wgmma and cuBLASLt fp8 take) in e4m3.

  python3 scripts/problemsets/sm90_llm_sets.py [--out-dir data/problems]
"""
import argparse
import os
import re

SETS = {  # file -> (lowest T, highest T, what it holds, fp8: forward layers in e4m3 with bf16 outputs)
    "sm90_llm_t2048.txt": (2048, 1 << 30, "T >= 2048 (fwd, dgrad, wgrad)", False),
    "sm90_llm_t128_1024.txt": (128, 1024, "128 <= T <= 1024 (fwd, and dgrad / wgrad where the set has them)", False),
    "sm90_llm_t64.txt": (1, 64, "T <= 64 (decode: fwd)", False),
    "sm90_llm_t2048_e4m3.txt": (2048, 1 << 30, "T >= 2048, the forward layers (rcr) in fp8 e4m3 (bf16 outputs)", True),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source", default="data/problems/gemm_llm_train.txt")
    ap.add_argument("--out-dir", default="data/problems")
    a = ap.parse_args()
    rows = []
    for line in open(a.source):
        m = re.match(r"^(\S+\.t(\d+)(?:\.\w+)?): (.+)$", line.strip())
        if m:
            rows.append((m.group(1), int(m.group(2)), m.group(3)))
    for name, (lo, hi, what, fp8) in SETS.items():
        seen, out = set(), []
        for tag, t, prob in rows:
            if fp8:
                if not prob.startswith("gemm rcr ") or " bf16" not in prob:
                    continue
                prob = prob.replace(" bf16", " e4m3:e4m3:bf16", 1)
            if lo <= t <= hi and prob not in seen:
                seen.add(prob)
                out.append(f"{tag}: {prob}")
        with open(os.path.join(a.out_dir, name), "w") as f:
            f.write(f"# fam=sm90 against cuBLASLt: the distinct LLM-layer GEMMs of gemm_llm_train.txt with {what}\n")
            f.write("# one line per distinct problem (the first name that has it); scripts/problemsets/sm90_llm_sets.py\n")
            f.write("\n".join(out) + "\n")
        print(f"{name}: {len(out)} problems")


if __name__ == "__main__":
    main()
