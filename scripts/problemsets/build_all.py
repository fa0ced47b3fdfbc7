#!/usr/bin/env python3
"""Regenerates every problem set of data/problems (see data/problems/sets.md), in dependency order.

  python3 scripts/problemsets/build_all.py [--out data/problems]

Validation files drop keys found in the training files written before them, and the sweep
subsets sample the full files, so the order of MANIFEST matters.
"""
import argparse
import contextlib
import io
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import conv_nets  # noqa: E402
import conv_synth  # noqa: E402
import gemm_llm  # noqa: E402
import gemm_synth  # noqa: E402
import nets  # noqa: E402
import sweep_subsets  # noqa: E402

LEGACY = {  # written by nets.py before these sets existed; kept byte-identical
    "resnet50_mb32.txt": ["resnet50", "--batch", "32", "--dirs", "fwd,bwd_data,bwd_weight"],
    "resnext50_mb32.txt": ["resnext50", "--batch", "32", "--dirs", "fwd,bwd_data,bwd_weight"],
    "mobilenet_v2_mb32.txt": ["mobilenet_v2", "--batch", "32", "--dirs", "fwd,bwd_data,bwd_weight"],
    "convnext_t_mb32.txt": ["convnext_t", "--batch", "32", "--dirs", "fwd,bwd_data,bwd_weight"],
    "llm_gemm.txt": ["llm"],
}
SPATIAL_MORE = "6,8,12,16,20,24,30,32,40,48,60,64,80,96,120,128,160"
F16_TOKENS = ",".join(str(4 ** i) for i in range(8))


def manifest():
    """(output file, module, argv); '@name' in argv is the path of an earlier output."""
    legacy = [f"@{n}" for n in LEGACY]
    out = []
    for sfx, conv_b, gemm_t, synth_c, synth_g in (
            ("", [], [], [], []),
            ("_f16", ["--batches", "32", "--small-batches", "4"], ["--tokens", F16_TOKENS, "--bwd-tokens", "2048"],
             ["--per-kind", "12", "--seed", "8"], ["--random", "100", "--per-edge", "8", "--seed", "12"])):
        dt = ["--dtype", sfx[1:]] if sfx else []
        train_files = [f"@conv_nets_train{sfx}.txt", f"@conv_synth{sfx}.txt", f"@gemm_llm_train{sfx}.txt",
                       f"@gemm_synth{sfx}.txt"]
        out += [
            (f"conv_nets_train{sfx}.txt", conv_nets, ["--split", "train"] + dt + conv_b),
            (f"conv_synth{sfx}.txt", conv_synth, dt + synth_c),
            (f"gemm_llm_train{sfx}.txt", gemm_llm, ["--split", "train"] + dt + gemm_t),
            (f"gemm_synth{sfx}.txt", gemm_synth, dt + synth_g),
            (f"conv_nets_val{sfx}.txt", conv_nets, ["--split", "val"] + dt + conv_b + ["--exclude"] + train_files
             + legacy),
            (f"gemm_llm_val{sfx}.txt", gemm_llm, ["--split", "val"] + dt + gemm_t + ["--exclude"] + train_files
             + legacy),
        ]
    # Later training networks (bf16 only), kept apart from the held-out networks and the first split.
    out.append(("conv_nets_train2.txt", conv_nets, ["--split", "train2", "--exclude", "@conv_nets_train.txt",
                                                    "@conv_nets_val.txt"]))
    # A second GEMM held-out set (bf16), its keys disjoint from every training file and from the first one.
    out.append(("gemm_llm_val2.txt", gemm_llm, ["--split", "val2", "--exclude", "@conv_nets_train.txt", "@conv_synth.txt",
                                                "@gemm_llm_train.txt", "@gemm_synth.txt", "@gemm_llm_val.txt"]
                + [f"@{n}" for n in LEGACY]))
    # A second held-out set (bf16), its keys disjoint from every training split and from the first one.
    out.append(("conv_nets_val2.txt", conv_nets, ["--split", "val2", "--exclude", "@conv_nets_train.txt",
                                                  "@conv_nets_val.txt", "@conv_nets_train2.txt"]))
    # Synthetic training shapes on map sizes the first synthetic file lacks (12, 24, 48, ...; bf16), mostly
    # depthwise, whose spatial tiles pad these sizes differently; keys of both held-out sets left out.
    out.append(("conv_synth_spatial.txt", conv_synth, ["--kinds", "depthwise=120,grouped=25,pointwise=25,dense3x3=25",
                                                       "--spatial", SPATIAL_MORE, "--seed", "13", "--tag",
                                                       "synth_conv_sp", "--max-flops", "2e11", "--exclude",
                                                       "@conv_nets_val.txt", "@conv_nets_val2.txt"]))
    # Depthwise on those and the first map sizes at batches 32-128 (conv_synth_spatial's depthwise problems
    # are mostly small: a model trained with them took small-batch tiles on large-batch layers).
    out.append(("conv_synth_dw_batch.txt", conv_synth, ["--kinds", "depthwise=90", "--spatial",
                                                        SPATIAL_MORE + ",7,10,14,19,28,38,56,75,112", "--batches",
                                                        "32,64,128", "--seed", "14", "--tag", "synth_conv_dwb",
                                                        "--max-flops", "2e11", "--exclude", "@conv_nets_val.txt",
                                                        "@conv_nets_val2.txt", "@conv_synth_spatial.txt"]))
    # Video (bf16): SlowFast-R50 and synthetic 3-D convs factored into time and space, which the held-out R(2+1)D-18
    # and S3D use; sweep_subsets.py writes both whole as sweep/conv_train_video.txt.
    val = ["@conv_nets_val.txt", "@conv_nets_val2.txt", "@conv_nets_val_f16.txt"]
    out.append(("conv_nets_train3.txt", conv_nets, ["--split", "train3", "--small-batches", "1,4", "--exclude"] + val))
    out.append(("conv_synth_temporal.txt", conv_synth, ["--kinds", "temporal=60", "--seed", "11", "--tag", "synth_conv_t",
                                                        "--batches", "1,2,4,8,16", "--exclude"] + val))
    return out


SWEEP_FILES = ("sweep/gemm_train.txt", "sweep/gemm_train_more.txt", "sweep/gemm_val.txt", "sweep/conv_train.txt", "sweep/conv_train_more.txt",
               "sweep/conv_train_more2.txt", "sweep/conv_train_more3.txt", "sweep/conv_train_nets2.txt",
               "sweep/conv_val2.txt", "sweep/gemm_val2.txt", "sweep/conv_train_spatial.txt", "sweep/conv_train_dw_batch.txt",
               "sweep/conv_val.txt", "sweep/conv_train_video.txt")


def build(out_dir):
    """Writes every file under out_dir; returns their paths relative to it."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, args in LEGACY.items():
        buf = io.StringIO()
        old = sys.argv
        sys.argv = ["scripts/problemsets/nets.py"] + args
        try:
            with contextlib.redirect_stdout(buf):
                nets.main()
        finally:
            sys.argv = old
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(buf.getvalue())
        written.append(name)
    for name, module, argv in manifest():
        argv = [os.path.join(out_dir, a[1:]) if a.startswith("@") else a for a in argv]
        module.main(argv + ["--out", os.path.join(out_dir, name)])
        written.append(name)
    sweep_subsets.main(["--data", out_dir, "--out", os.path.join(out_dir, "sweep")])
    return written + list(SWEEP_FILES)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "data", "problems"))
    for name in build(ap.parse_args().out):
        print(name)


if __name__ == "__main__":
    main()
