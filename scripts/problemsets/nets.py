#!/usr/bin/env python3
"""Layer shapes of real networks as tilepick problem files (one unique shape per line, tagged).

  python3 scripts/problemsets/nets.py resnet50 --batch 32 [--dirs fwd,bwd_data,bwd_weight] [--dtype bf16]
  python3 scripts/problemsets/nets.py llm --tokens 1,128,2048,8192

Networks: resnet50, resnext50 (32x4d), mobilenet_v2, convnext_t, llm (Llama-3 8B/70B projections).
Layers with identical problems are written once, under the first layer's name. 224x224 inputs.
"""
import argparse
import sys


def conv(name, cin, cout, hw, k, s=1, p=None, g=1):
    """One 2-D conv layer; returns (name, fields, output size)."""
    p = (k - 1) // 2 if p is None else p
    out = (hw + 2 * p - k) // s + 1
    return (name, dict(g=g, ic=cin, ih=hw, iw=hw, oc=cout, kh=k, kw=k, sh=s, sw=s, ph=p, pw=p)), out


def bottleneck_net(prefix, widths, groups):
    layers = []
    l, hw = conv(f"{prefix}.conv1", 3, 64, 224, 7, 2, 3)
    layers.append(l)
    hw = 56  # after the 3x3/2 max pool
    cin = 64
    for stage, (blocks, width, out) in enumerate(zip((3, 4, 6, 3), widths, (256, 512, 1024, 2048)), start=1):
        for b in range(blocks):
            s = 2 if (b == 0 and stage > 1) else 1
            n = f"{prefix}.layer{stage}.{b}"
            layers.append(conv(f"{n}.conv1", cin, width, hw, 1)[0])
            l, ohw = conv(f"{n}.conv2", width, width, hw, 3, s, 1, groups)
            layers.append(l)
            layers.append(conv(f"{n}.conv3", width, out, ohw, 1)[0])
            if b == 0:
                layers.append(conv(f"{n}.downsample", cin, out, hw, 1, s, 0)[0])
            cin, hw = out, ohw
    return layers, [(f"{prefix}.fc", 2048, 1000, None)]


def mobilenet_v2():
    layers = []
    l, hw = conv("mbv2.features.0", 3, 32, 224, 3, 2, 1)
    layers.append(l)
    cin, idx = 32, 1
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            stride = s if i == 0 else 1
            hidden = cin * t
            name = f"mbv2.features.{idx}"
            if t != 1:
                layers.append(conv(f"{name}.expand", cin, hidden, hw, 1)[0])
            l, ohw = conv(f"{name}.dw", hidden, hidden, hw, 3, stride, 1, hidden)
            layers.append(l)
            layers.append(conv(f"{name}.project", hidden, c, ohw, 1)[0])
            cin, hw, idx = c, ohw, idx + 1
    layers.append(conv("mbv2.features.18", 320, 1280, hw, 1)[0])
    return layers, [("mbv2.classifier", 1280, 1000, None)]


def convnext_t():
    layers, linears = [], []
    l, hw = conv("convnext_t.stem", 3, 96, 224, 4, 4, 0)
    layers.append(l)
    dims = (96, 192, 384, 768)
    for stage, (depth, dim) in enumerate(zip((3, 3, 9, 3), dims)):
        if stage > 0:
            l, hw = conv(f"convnext_t.downsample{stage}", dims[stage - 1], dim, hw, 2, 2, 0)
            layers.append(l)
        for b in range(depth):
            n = f"convnext_t.stage{stage}.{b}"
            layers.append(conv(f"{n}.dwconv", dim, dim, hw, 7, 1, 3, dim)[0])
            linears.append((f"{n}.pwconv1", dim, 4 * dim, hw * hw, "bias+gelu_erf"))
            linears.append((f"{n}.pwconv2", 4 * dim, dim, hw * hw, "bias"))
    linears.append(("convnext_t.head", 768, 1000, None))
    return layers, linears


def emit_conv(layers, batch, dirs, dtype, seen, out):
    for name, f in layers:
        for d in dirs:
            s = (f"{d} g{f['g']} mb{batch} ic{f['ic']} ih{f['ih']} iw{f['iw']} oc{f['oc']} kh{f['kh']} kw{f['kw']} "
                 f"sh{f['sh']} sw{f['sw']} ph{f['ph']} pw{f['pw']} {dtype}")
            if s not in seen:
                seen.add(s)
                out.append(f"{name}{'' if d == 'fwd' else '.' + d}: {s}")


def emit_linear(linears, batch, dtype, seen, out):
    for lin in linears:
        name, k, n, pix = lin[0], lin[1], lin[2], lin[3]
        ep = lin[4] if len(lin) > 4 else None
        m = batch * (pix or 1)
        s = f"gemm rcr m{m} n{n} k{k} {dtype}" + (f" ep={ep}" if ep else "")
        if s not in seen:
            seen.add(s)
            out.append(f"{name}: {s}")


def llm(tokens, dtype, out):
    models = {  # hidden, q+kv projection width, mlp width
        "llama3_8b": (4096, 4096 + 2 * 1024, 14336),
        "llama3_70b": (8192, 8192 + 2 * 1024, 28672),
    }
    for model, (h, qkv, mlp) in models.items():
        for t in tokens:
            for layer, n, k in (("qkv", qkv, h), ("o", h, h), ("gate_up", 2 * mlp, h), ("down", h, mlp)):
                out.append(f"{model}.{layer}.t{t}: gemm rcr m{t} n{n} k{k} {dtype}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("net", choices=["resnet50", "resnext50", "mobilenet_v2", "convnext_t", "llm"])
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--dirs", default="fwd")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--tokens", default="1,128,2048,8192")
    a = ap.parse_args()
    out = [f"# {' '.join(['scripts/problemsets/nets.py'] + sys.argv[1:])}"]
    if a.net == "llm":
        llm([int(t) for t in a.tokens.split(",")], a.dtype, out)
    else:
        layers, linears = {
            "resnet50": lambda: bottleneck_net("resnet50", (64, 128, 256, 512), 1),
            "resnext50": lambda: bottleneck_net("resnext50", (128, 256, 512, 1024), 32),
            "mobilenet_v2": mobilenet_v2,
            "convnext_t": convnext_t,
        }[a.net]()
        seen = set()
        emit_conv(layers, a.batch, a.dirs.split(","), a.dtype, seen, out)
        emit_linear(linears, a.batch, a.dtype, seen, out)
    print("\n".join(out))


if __name__ == "__main__":
    main()
