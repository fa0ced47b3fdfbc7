#!/usr/bin/env python3
"""Conv problems of real networks (architectures.py), one split at a time.

  python3 scripts/problemsets/conv_nets.py --split train [--dtype bf16] [--batches 1,8,32,128]
      [--small-batches 1,4,16] [--dirs fwd,bwd_data,bwd_weight] [--exclude FILE ...] [--out FILE]

Each distinct layer shape of a network is written once per (batch, direction), tagged
`<net>.<first layer with that shape>`; `# xN` counts the network's layers with that shape.
U-Net and the video nets use --small-batches. Problems whose key is in an --exclude file are
dropped (validation files exclude every training file); the header counts them.
"""
import argparse
import sys

from architectures import NETWORKS
from common import CONV_TRAIN, CONV_TRAIN2, CONV_TRAIN3, CONV_VAL, CONV_VAL2, command, emit, excluded_keys, int_list
from shapes import DIRS, conv_string, header, line

SMALL_BATCH_NETS = ("unet", "r3d18", "r2plus1d18", "mc3_18", "s3d", "slowfast_r50", "x3d_m")


def generate(nets, batches, small_batches, dirs, dtype, exclude=frozenset()):
    lines, dropped = [], 0
    for net in nets:
        uniq = NETWORKS[net]().unique()
        lines.append(f"# {net}: {sum(c for _, _, c in uniq)} conv layers, {len(uniq)} distinct shapes")
        for b in (small_batches if net in SMALL_BATCH_NETS else batches):
            for name, sh, count in uniq:
                for d in dirs:
                    prob = conv_string(d, sh, b, dtype)
                    if prob in exclude:
                        dropped += 1
                        continue
                    lines.append(line(f"{net}.{name}", prob, count))
    return lines, dropped


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["train", "train2", "train3", "val", "val2"], required=True)
    ap.add_argument("--nets", help="comma list overriding the split's networks")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--batches", default="1,8,32,128")
    ap.add_argument("--small-batches", default="1,4,16")
    ap.add_argument("--dirs", default=",".join(DIRS))
    ap.add_argument("--exclude", nargs="*", default=[])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    nets = a.nets.split(",") if a.nets else {"train": CONV_TRAIN, "train2": CONV_TRAIN2, "train3": CONV_TRAIN3, "val": CONV_VAL,
                                       "val2": CONV_VAL2}[a.split]
    body, dropped = generate(nets, int_list(a.batches), int_list(a.small_batches), a.dirs.split(","), a.dtype,
                             excluded_keys(a.exclude))
    extra = [f"split {a.split}: {', '.join(nets)}"]
    if a.exclude:
        extra.append(f"dropped {dropped} problems whose key is in an excluded (training) file")
    emit(header(command("conv_nets.py", argv), body, extra) + body, a.out)


if __name__ == "__main__":
    main()
