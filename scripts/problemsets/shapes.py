"""Shape propagation for network definitions and canonical tilepick problem strings.

A network is written as calls on a Tracer: each conv records one layer and returns the output
tensor shape, so output sizes are computed, never typed. Problem strings are written in the
canonical form that `tilepick problem parse` prints, so string equality is key equality.
"""
from dataclasses import dataclass
import hashlib

DIRS = ("fwd", "bwd_data", "bwd_weight")


@dataclass(frozen=True)
class T:
    """An activation: channels and spatial sizes (h, w) or (d, h, w); batch is left out."""
    c: int
    sp: tuple


@dataclass(frozen=True)
class ConvShape:
    """One conv layer without batch, direction and dtype. Spatial tuples are (h, w) or (d, h, w)."""
    c: int
    k: int
    g: int
    inp: tuple
    filt: tuple
    stride: tuple
    pad: tuple
    dil: tuple

    def out(self):
        return tuple((i + 2 * p - (d * (f - 1) + 1)) // s + 1
                     for i, f, s, p, d in zip(self.inp, self.filt, self.stride, self.pad, self.dil))

    def kind(self):
        if len(self.inp) == 3:
            return "3d"
        if self.g > 1 and self.c == self.g and self.k == self.g:
            return "depthwise"
        return "grouped" if self.g > 1 else "dense"


def _tup(v, n):
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


def out_size(i, f, s, p, d=1):
    return (i + 2 * p - (d * (f - 1) + 1)) // s + 1


class Tracer:
    """Records the conv layers of one network in call order."""

    def __init__(self, net):
        self.net = net
        self.layers = []  # (name, ConvShape)

    def conv(self, x, name, cout, k, s=1, p=None, g=1, d=1):
        n = len(x.sp)
        k, s, d = _tup(k, n), _tup(s, n), _tup(d, n)
        p = tuple(di * (ki - 1) // 2 for ki, di in zip(k, d)) if p is None else _tup(p, n)
        if x.c % g or cout % g:
            raise ValueError(f"{self.net}.{name}: channels {x.c}->{cout} not divisible by groups {g}")
        shape = ConvShape(x.c, cout, g, x.sp, k, s, p, d)
        o = shape.out()
        if min(o) < 1:
            raise ValueError(f"{self.net}.{name}: empty output {o} from input {x.sp}")
        self.layers.append((name, shape))
        return T(cout, o)

    def conv_transpose(self, x, name, cout, k, s, p=0):
        """ConvTranspose: recorded as the conv whose bwd_data it is (input = the transpose's output)."""
        n = len(x.sp)
        k, s, p = _tup(k, n), _tup(s, n), _tup(p, n)
        o = tuple((i - 1) * si + ki - 2 * pi for i, ki, si, pi in zip(x.sp, k, s, p))
        shape = ConvShape(cout, x.c, 1, o, k, s, p, (1,) * n)
        if shape.out() != x.sp:
            raise ValueError(f"{self.net}.{name}: transpose does not invert {shape}")
        self.layers.append((name + ".convT", shape))
        return T(cout, o)

    @staticmethod
    def pool(x, k, s=None, p=0, ceil=False):
        n = len(x.sp)
        k, s, p = _tup(k, n), _tup(k if s is None else s, n), _tup(p, n)
        if ceil:
            return T(x.c, tuple(-(-(i + 2 * pi - ki) // si) + 1 for i, ki, si, pi in zip(x.sp, k, s, p)))
        return T(x.c, tuple(out_size(i, ki, si, pi) for i, ki, si, pi in zip(x.sp, k, s, p)))

    @staticmethod
    def cat(*xs):
        if len({x.sp for x in xs}) != 1:
            raise ValueError(f"concat of mismatched spatial sizes {[x.sp for x in xs]}")
        return T(sum(x.c for x in xs), xs[0].sp)

    def unique(self):
        """Distinct shapes in first-use order: [(first layer name, shape, count)]."""
        order, count, first = [], {}, {}
        for name, sh in self.layers:
            if sh not in count:
                order.append(sh)
                count[sh], first[sh] = 0, name
            count[sh] += 1
        return [(first[sh], sh, count[sh]) for sh in order]


def conv_string(direction, sh, batch, dtype):
    """Canonical conv problem string."""
    ax = ("d", "h", "w") if len(sh.inp) == 3 else ("h", "w")
    t = [direction, f"g{sh.g}", f"mb{batch}", f"ic{sh.c}"]
    t += [f"i{a}{v}" for a, v in zip(ax, sh.inp)] + [f"oc{sh.k}"]
    t += [f"k{a}{v}" for a, v in zip(ax, sh.filt)] + [f"s{a}{v}" for a, v in zip(ax, sh.stride)]
    t += [f"p{a}{v}" for a, v in zip(ax, sh.pad)]
    if any(v != 1 for v in sh.dil):
        t += [f"d{a}{v}" for a, v in zip(ax, sh.dil)]
    return " ".join(t + [dtype])


def conv_flops(sh, batch):
    n = 1
    for v in sh.out() + sh.filt:
        n *= v
    return 2.0 * batch * n * (sh.c // sh.g) * sh.k


def gemm_string(layout, m, n, k, dtype, batch=1, beta=0, ep=None):
    t = ["gemm", layout] + ([f"batch{batch}"] if batch != 1 else []) + [f"m{m}", f"n{n}", f"k{k}", dtype]
    if beta:
        t.append(f"beta={beta}")
    if ep:
        t.append(f"ep={ep}")
    return " ".join(t)


def line(tag, problem, count=1):
    return f"{tag}: {problem}" + (f"  # x{count}" if count > 1 else "")


def split_line(text):
    """(tag, problem) of one file line, or None for blank/comment lines."""
    text = text.split("#", 1)[0].strip()
    if not text:
        return None
    head, _, rest = text.partition(" ")
    if head.endswith(":") and len(head) > 1:
        return head[:-1], rest.strip()
    return "", text


def read_problems(path):
    with open(path) as f:
        return [p for p in map(split_line, f) if p]


def stable_hash(text):
    return int.from_bytes(hashlib.sha1(text.encode()).digest()[:8], "big")


def header(command, lines, extra=()):
    n = sum(1 for ln in lines if not ln.startswith("#"))
    return [f"# generated by: {command}", f"# problems: {n}"] + [f"# {e}" for e in extra]
