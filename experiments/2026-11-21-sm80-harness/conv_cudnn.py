# cuDNN baselines (through PyTorch, channels-last bf16) for the conv problems of sm80_bench.txt.
# Cold L2: a 256 MB buffer is rewritten before each timed call. Prints ms and TFLOPS.
import sys, torch, torch.nn.functional as F

torch.backends.cudnn.benchmark = True
flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")

def parse(line):
    toks = line.split("|")[0].split()
    d = {"dir": toks[0]}
    for t in toks[1:]:
        for key in ("mb", "ic", "ih", "iw", "oc", "kh", "kw", "sh", "sw", "ph", "pw", "g"):
            if t.startswith(key) and t[len(key):].isdigit():
                d[key] = int(t[len(key):]); break
    return d

def timed(fn, reps=10):
    for _ in range(3): fn()
    ts = []
    for _ in range(reps):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return sorted(ts)[len(ts) // 2]

seen = set()
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line or line.startswith("gemm"): continue
    prob = line.split("|")[0].strip()
    if prob in seen: continue
    seen.add(prob)
    p = parse(line)
    x = torch.randn(p["mb"], p["ic"], p["ih"], p["iw"], device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    w = torch.randn(p["oc"], p["ic"] // p["g"], p["kh"], p["kw"], device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last)
    kw = dict(stride=(p["sh"], p["sw"]), padding=(p["ph"], p["pw"]), groups=p["g"])
    y = F.conv2d(x, w, **kw)
    dy = torch.randn_like(y)
    flops = 2.0 * y.numel() * (p["ic"] // p["g"]) * p["kh"] * p["kw"]
    if p["dir"] == "fwd":
        fn = lambda: F.conv2d(x, w, **kw)
    elif p["dir"] == "bwd_data":
        fn = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, kw["stride"], kw["padding"], (1, 1), False, (0, 0), p["g"], (True, False, False))
    else:
        fn = lambda: torch.ops.aten.convolution_backward(dy, x, w, None, kw["stride"], kw["padding"], (1, 1), False, (0, 0), p["g"], (False, True, False))
    ms = timed(fn)
    print(f"CUDNN {prob:60s} {ms:8.3f} ms {flops / ms / 1e9:7.1f} TFLOPS")
