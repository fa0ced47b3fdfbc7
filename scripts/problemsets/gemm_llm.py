#!/usr/bin/env python3
"""GEMMs of transformer linear layers, one split at a time.

  python3 scripts/problemsets/gemm_llm.py --split train [--dtype bf16] [--tokens 1,2,3,4,...]
      [--bwd-tokens 512,2048,8192] [--exclude FILE ...] [--out FILE]

A linear layer y = x W^T + b with x [T, K] and W [N, K] both row-major is `gemm rcr mT nN kK`
(the bias/activation as ep= where the model has one). Its backward GEMMs, written for the
--bwd-tokens only: dgrad dx = dy W is `rrr mT nK kN`, wgrad dW = dy^T x is `crr mN nK kT`.
Fused projections (QKV, gate+up) are one GEMM, as serving stacks run them. Tags:
<model>.<layer>.t<T>[.dgrad|.wgrad]. Default tokens: 2^i and 3*2^i from 1 to 16384.
"""
import argparse
import sys

from common import GEMM_TRAIN, GEMM_VAL, GEMM_VAL2, command, emit, excluded_keys, int_list
from shapes import gemm_string, header, line

# hidden, fused QKV width, MLP width, gated MLP, vocab, bias epilogues (qkv/o, mlp up, mlp down, head)
MODELS = {
    "llama3_8b": dict(h=4096, qkv=4096 + 2 * 1024, mlp=14336, gated=True, vocab=128256),
    "llama3_70b": dict(h=8192, qkv=8192 + 2 * 1024, mlp=28672, gated=True, vocab=128256),
    "mistral_7b": dict(h=4096, qkv=4096 + 2 * 1024, mlp=14336, gated=True, vocab=32000),
    "gpt2": dict(h=768, qkv=3 * 768, mlp=3072, gated=False, vocab=50257, ep=("bias", "bias", "bias+gelu_tanh",
                                                                               "bias", None)),
    "gpt2_xl": dict(h=1600, qkv=3 * 1600, mlp=6400, gated=False, vocab=50257, ep=("bias", "bias", "bias+gelu_tanh",
                                                                                   "bias", None)),
    "bert_large": dict(h=1024, qkv=3 * 1024, mlp=4096, gated=False, vocab=30522, ep=("bias", "bias", "bias+gelu_erf",
                                                                                      "bias", "bias")),
    "gptj_6b": dict(h=4096, qkv=3 * 4096, mlp=16384, gated=False, vocab=50400, ep=(None, None, "bias+gelu_tanh",
                                                                                   "bias", "bias")),
    "qwen2_7b": dict(h=3584, qkv=3584 + 2 * 512, mlp=18944, gated=True, vocab=152064, ep=("bias", None, None, None,
                                                                                          None)),
    "phi3_mini": dict(h=3072, qkv=3 * 3072, mlp=8192, gated=True, vocab=32064),
    # The second held-out set: Falcon-7B (multi-query attention, 71 heads of 64), StableLM-3B-4E1T,
    # Qwen2-1.5B (GQA, 2 KV heads of 128, QKV bias), OPT-1.3B (biases everywhere, ReLU MLP).
    "falcon_7b": dict(h=4544, qkv=4544 + 2 * 64, mlp=18176, gated=False, vocab=65024),
    "stablelm_3b": dict(h=2560, qkv=3 * 2560, mlp=6912, gated=True, vocab=50304),
    "qwen2_1_5b": dict(h=1536, qkv=1536 + 2 * 256, mlp=8960, gated=True, vocab=151936, ep=("bias", None, None, None,
                                                                                            None)),
    "opt_1_3b": dict(h=2048, qkv=3 * 2048, mlp=8192, gated=False, vocab=50272, ep=("bias", "bias", "bias+relu",
                                                                                   "bias", None)),
}

DEFAULT_TOKENS = sorted({2 ** i for i in range(15)} | {3 * 2 ** i for i in range(13)})


def layers(cfg):
    """(name, N, K, epilogue) of one model's linear layers."""
    ep = cfg.get("ep", (None,) * 5)
    up = 2 * cfg["mlp"] if cfg["gated"] else cfg["mlp"]
    return [("qkv", cfg["qkv"], cfg["h"], ep[0]), ("o", cfg["h"], cfg["h"], ep[1]),
            ("gate_up" if cfg["gated"] else "up", up, cfg["h"], ep[2]), ("down", cfg["h"], cfg["mlp"], ep[3]),
            ("lm_head", cfg["vocab"], cfg["h"], ep[4])]


def generate(models, tokens, bwd_tokens, dtype, exclude=frozenset()):
    lines, dropped = [], 0

    def add(tag, prob):
        nonlocal dropped
        if prob in exclude:
            dropped += 1
        else:
            lines.append(line(tag, prob))

    for model in models:
        lines.append(f"# {model}")
        for t in tokens:
            for name, n, k, ep in layers(MODELS[model]):
                add(f"{model}.{name}.t{t}", gemm_string("rcr", t, n, k, dtype, ep=ep))
        for t in bwd_tokens:
            for name, n, k, _ in layers(MODELS[model]):
                add(f"{model}.{name}.t{t}.dgrad", gemm_string("rrr", t, k, n, dtype))
                add(f"{model}.{name}.t{t}.wgrad", gemm_string("crr", n, k, t, dtype))
    return lines, dropped


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--split", choices=["train", "val", "val2"], required=True)
    ap.add_argument("--models", help="comma list overriding the split's models")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--tokens", default=",".join(map(str, DEFAULT_TOKENS)))
    ap.add_argument("--bwd-tokens", default="512,2048,8192")
    ap.add_argument("--exclude", nargs="*", default=[])
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    models = a.models.split(",") if a.models else {"train": GEMM_TRAIN, "val": GEMM_VAL, "val2": GEMM_VAL2}[a.split]
    body, dropped = generate(models, int_list(a.tokens), int_list(a.bwd_tokens), a.dtype, excluded_keys(a.exclude))
    extra = [f"split {a.split}: {', '.join(models)}"]
    if a.exclude:
        extra.append(f"dropped {dropped} problems whose key is in an excluded (training) file")
    emit(header(command("gemm_llm.py", argv), body, extra) + body, a.out)


if __name__ == "__main__":
    main()
