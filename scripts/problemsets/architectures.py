"""Conv layers of real networks, written from their definitions (torchvision layouts and names).

Each function returns a Tracer holding the network's conv layers in order. Classifier/linear layers
are left out (they are GEMMs). Input resolutions: 224 unless the network's own (Inception-v3 299,
EfficientNet-B3 300, U-Net 256, video nets 16x112x112).
"""
import math

from shapes import T, Tracer


def _resnet(net, block, depths, width_per_group=64, groups=1):
    tr = Tracer(net)
    x = tr.conv(T(3, (224, 224)), "conv1", 64, 7, 2, 3)
    x = tr.pool(x, 3, 2, 1)
    expansion = 4 if block == "bottleneck" else 1
    for stage, (blocks, planes) in enumerate(zip(depths, (64, 128, 256, 512)), start=1):
        for b in range(blocks):
            s = 2 if (b == 0 and stage > 1) else 1
            n = f"layer{stage}.{b}"
            out = planes * expansion
            if block == "basic":
                y = tr.conv(x, f"{n}.conv1", planes, 3, s)
                y = tr.conv(y, f"{n}.conv2", planes, 3)
            else:
                width = planes * width_per_group // 64 * groups
                y = tr.conv(x, f"{n}.conv1", width, 1)
                y = tr.conv(y, f"{n}.conv2", width, 3, s, g=groups)
                y = tr.conv(y, f"{n}.conv3", out, 1)
            if s != 1 or x.c != out:
                tr.conv(x, f"{n}.downsample", out, 1, s)
            x = y
    return tr


def resnet18():
    return _resnet("resnet18", "basic", (2, 2, 2, 2))


def resnet34():
    return _resnet("resnet34", "basic", (3, 4, 6, 3))


def resnet50():
    return _resnet("resnet50", "bottleneck", (3, 4, 6, 3))


def resnet101():
    return _resnet("resnet101", "bottleneck", (3, 4, 23, 3))


def resnext50():
    return _resnet("resnext50", "bottleneck", (3, 4, 6, 3), width_per_group=4, groups=32)


def mobilenet_v2():
    tr = Tracer("mobilenet_v2")
    x = tr.conv(T(3, (224, 224)), "features.0", 32, 3, 2)
    idx = 1
    for t, c, n, s in ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                       (6, 160, 3, 2), (6, 320, 1, 1)):
        for i in range(n):
            name, hidden = f"features.{idx}", x.c * t
            y = tr.conv(x, f"{name}.expand", hidden, 1) if t != 1 else x
            y = tr.conv(y, f"{name}.dw", hidden, 3, s if i == 0 else 1, g=hidden)
            x, idx = tr.conv(y, f"{name}.project", c, 1), idx + 1
    tr.conv(x, "features.18", 1280, 1)
    return tr


def _convnext(net, depths):
    tr = Tracer(net)
    dims = (96, 192, 384, 768)
    x = tr.conv(T(3, (224, 224)), "stem", 96, 4, 4, 0)
    for stage, (depth, dim) in enumerate(zip(depths, dims)):
        if stage > 0:
            x = tr.conv(x, f"downsample{stage}", dim, 2, 2, 0)
        for b in range(depth):  # the block's pointwise layers are Linear (GEMMs), not convs
            tr.conv(x, f"stage{stage}.{b}.dwconv", dim, 7, 1, 3, g=dim)
    return tr


def convnext_t():
    return _convnext("convnext_t", (3, 3, 9, 3))


def convnext_s():
    return _convnext("convnext_s", (3, 3, 27, 3))


def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def _efficientnet(net, width, depth, res):
    tr = Tracer(net)
    x = tr.conv(T(3, (res, res)), "features.0", _make_divisible(32 * width), 3, 2)
    stage_cfg = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                 (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
    for stage, (t, k, s, c, n) in enumerate(stage_cfg, start=1):
        cout = _make_divisible(c * width)
        for i in range(int(math.ceil(n * depth))):
            name = f"features.{stage}.{i}"
            hidden = _make_divisible(x.c * t)
            y = tr.conv(x, f"{name}.expand", hidden, 1) if t != 1 else x
            y = tr.conv(y, f"{name}.dw", hidden, k, s if i == 0 else 1, g=hidden)
            squeeze = max(1, x.c // 4)  # squeeze-excitation: 1x1 convs on the pooled 1x1 map
            se = tr.conv(T(hidden, (1, 1)), f"{name}.se.fc1", squeeze, 1)
            tr.conv(se, f"{name}.se.fc2", hidden, 1)
            x = tr.conv(y, f"{name}.project", cout, 1)
    tr.conv(x, "features.8", 4 * x.c, 1)
    return tr


def efficientnet_b0():
    return _efficientnet("efficientnet_b0", 1.0, 1.0, 224)


def efficientnet_b3():
    return _efficientnet("efficientnet_b3", 1.2, 1.4, 300)


def vgg16():
    tr = Tracer("vgg16")
    x, i = T(3, (224, 224)), 0
    for v in (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"):
        if v == "M":
            x = tr.pool(x, 2, 2)
        else:
            x = tr.conv(x, f"features.{i}", v, 3)
        i += 1 if v == "M" else 2  # conv + relu
    return tr


def _inception_a(tr, x, n, pool_features):
    b1 = tr.conv(x, f"{n}.branch1x1", 64, 1)
    b5 = tr.conv(tr.conv(x, f"{n}.branch5x5_1", 48, 1), f"{n}.branch5x5_2", 64, 5)
    b3 = tr.conv(x, f"{n}.branch3x3dbl_1", 64, 1)
    b3 = tr.conv(tr.conv(b3, f"{n}.branch3x3dbl_2", 96, 3), f"{n}.branch3x3dbl_3", 96, 3)
    bp = tr.conv(tr.pool(x, 3, 1, 1), f"{n}.branch_pool", pool_features, 1)
    return tr.cat(b1, b5, b3, bp)


def _inception_b(tr, x, n):
    b3 = tr.conv(x, f"{n}.branch3x3", 384, 3, 2, 0)
    bd = tr.conv(tr.conv(x, f"{n}.branch3x3dbl_1", 64, 1), f"{n}.branch3x3dbl_2", 96, 3)
    bd = tr.conv(bd, f"{n}.branch3x3dbl_3", 96, 3, 2, 0)
    return tr.cat(b3, bd, tr.pool(x, 3, 2))


def _inception_c(tr, x, n, c7):
    b1 = tr.conv(x, f"{n}.branch1x1", 192, 1)
    b7 = tr.conv(x, f"{n}.branch7x7_1", c7, 1)
    b7 = tr.conv(b7, f"{n}.branch7x7_2", c7, (1, 7), p=(0, 3))
    b7 = tr.conv(b7, f"{n}.branch7x7_3", 192, (7, 1), p=(3, 0))
    bd = tr.conv(x, f"{n}.branch7x7dbl_1", c7, 1)
    for j, (k, p, c) in enumerate((((7, 1), (3, 0), c7), ((1, 7), (0, 3), c7), ((7, 1), (3, 0), c7),
                                   ((1, 7), (0, 3), 192)), start=2):
        bd = tr.conv(bd, f"{n}.branch7x7dbl_{j}", c, k, p=p)
    bp = tr.conv(tr.pool(x, 3, 1, 1), f"{n}.branch_pool", 192, 1)
    return tr.cat(b1, b7, bd, bp)


def _inception_d(tr, x, n):
    b3 = tr.conv(tr.conv(x, f"{n}.branch3x3_1", 192, 1), f"{n}.branch3x3_2", 320, 3, 2, 0)
    b7 = tr.conv(x, f"{n}.branch7x7x3_1", 192, 1)
    b7 = tr.conv(b7, f"{n}.branch7x7x3_2", 192, (1, 7), p=(0, 3))
    b7 = tr.conv(b7, f"{n}.branch7x7x3_3", 192, (7, 1), p=(3, 0))
    b7 = tr.conv(b7, f"{n}.branch7x7x3_4", 192, 3, 2, 0)
    return tr.cat(b3, b7, tr.pool(x, 3, 2))


def _inception_e(tr, x, n):
    b1 = tr.conv(x, f"{n}.branch1x1", 320, 1)
    b3 = tr.conv(x, f"{n}.branch3x3_1", 384, 1)
    b3 = tr.cat(tr.conv(b3, f"{n}.branch3x3_2a", 384, (1, 3), p=(0, 1)),
                tr.conv(b3, f"{n}.branch3x3_2b", 384, (3, 1), p=(1, 0)))
    bd = tr.conv(tr.conv(x, f"{n}.branch3x3dbl_1", 448, 1), f"{n}.branch3x3dbl_2", 384, 3)
    bd = tr.cat(tr.conv(bd, f"{n}.branch3x3dbl_3a", 384, (1, 3), p=(0, 1)),
                tr.conv(bd, f"{n}.branch3x3dbl_3b", 384, (3, 1), p=(1, 0)))
    bp = tr.conv(tr.pool(x, 3, 1, 1), f"{n}.branch_pool", 192, 1)
    return tr.cat(b1, b3, bd, bp)


def inception_v3():
    tr = Tracer("inception_v3")
    x = tr.conv(T(3, (299, 299)), "Conv2d_1a_3x3", 32, 3, 2, 0)
    x = tr.conv(x, "Conv2d_2a_3x3", 32, 3, 1, 0)
    x = tr.pool(tr.conv(x, "Conv2d_2b_3x3", 64, 3), 3, 2)
    x = tr.conv(x, "Conv2d_3b_1x1", 80, 1)
    x = tr.pool(tr.conv(x, "Conv2d_4a_3x3", 192, 3, 1, 0), 3, 2)
    for n, pf in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        x = _inception_a(tr, x, n, pf)
    x = _inception_b(tr, x, "Mixed_6a")
    for n, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        x = _inception_c(tr, x, n, c7)
    x = _inception_d(tr, x, "Mixed_7a")
    for n in ("Mixed_7b", "Mixed_7c"):
        x = _inception_e(tr, x, n)
    assert x == T(2048, (8, 8)), x
    return tr


def unet():
    """U-Net (double 3x3 convs, padded; transposed-conv upsampling), 3 -> 2 classes, 256x256."""
    tr = Tracer("unet")

    def double(x, n, c):
        return tr.conv(tr.conv(x, f"{n}.conv1", c, 3), f"{n}.conv2", c, 3)

    skips, x = [], double(T(3, (256, 256)), "inc", 64)
    for i, c in enumerate((128, 256, 512, 1024), start=1):
        skips.append(x)
        x = double(tr.pool(x, 2), f"down{i}", c)
    for i, c in enumerate((512, 256, 128, 64), start=1):
        up = tr.conv_transpose(x, f"up{i}.up", c, 2, 2)
        x = double(tr.cat(skips.pop(), up), f"up{i}", c)
    tr.conv(x, "outc", 2, 1)
    return tr


def _video_resnet(net, conv2plus1d):
    tr = Tracer(net)
    x = T(3, (16, 112, 112))
    if conv2plus1d:
        x = tr.conv(x, "stem.0", 45, (1, 7, 7), (1, 2, 2), (0, 3, 3))
        x = tr.conv(x, "stem.3", 64, (3, 1, 1), 1, (1, 0, 0))
    else:
        x = tr.conv(x, "stem.0", 64, (3, 7, 7), (1, 2, 2), (1, 3, 3))

    def conv3(x, n, cin, cout, s):
        if not conv2plus1d:
            return tr.conv(x, n, cout, 3, s)
        mid = (cin * cout * 27) // (cin * 9 + 3 * cout)
        y = tr.conv(x, f"{n}.0", mid, (1, 3, 3), (1, s, s), (0, 1, 1))
        return tr.conv(y, f"{n}.3", cout, (3, 1, 1), (s, 1, 1), (1, 0, 0))

    for stage, planes in enumerate((64, 128, 256, 512), start=1):
        for b in range(2):
            s = 2 if (b == 0 and stage > 1) else 1
            n, cin = f"layer{stage}.{b}", x.c
            y = conv3(x, f"{n}.conv1", cin, planes, s)
            # torchvision's R(2+1)D block sizes both convs' mid planes from (inplanes, planes)
            y = conv3(y, f"{n}.conv2", cin, planes, 1)
            if s != 1 or cin != planes:
                tr.conv(x, f"{n}.downsample", planes, 1, s)
            x = y
    return tr


def r3d18():
    return _video_resnet("r3d18", False)


def r2plus1d18():
    return _video_resnet("r2plus1d18", True)


def densenet121():
    """Dense blocks (6, 12, 24, 16), growth 32, bottleneck 4x growth; transitions halve channels."""
    tr = Tracer("densenet121")
    x = tr.pool(tr.conv(T(3, (224, 224)), "features.conv0", 64, 7, 2, 3), 3, 2, 1)
    for b, layers in enumerate((6, 12, 24, 16), start=1):
        for i in range(1, layers + 1):
            n = f"features.denseblock{b}.denselayer{i}"
            x = tr.cat(x, tr.conv(tr.conv(x, f"{n}.conv1", 128, 1), f"{n}.conv2", 32, 3))
        if b < 4:
            x = tr.pool(tr.conv(x, f"features.transition{b}.conv", x.c // 2, 1), 2)
    return tr


def shufflenet_v2():
    """ShuffleNetV2 x1.0: stages (4, 8, 4) of 116 / 232 / 464 channels; units split the channels in half."""
    tr = Tracer("shufflenet_v2")
    x = tr.pool(tr.conv(T(3, (224, 224)), "conv1", 24, 3, 2), 3, 2, 1)
    for stage, (repeats, out) in enumerate(((4, 116), (8, 232), (4, 464)), start=2):
        half = out // 2
        for i in range(repeats):
            n = f"stage{stage}.{i}"
            if i == 0:  # stride 2: both branches see the whole input
                b1 = tr.conv(tr.conv(x, f"{n}.branch1.0", x.c, 3, 2, g=x.c), f"{n}.branch1.2", half, 1)
                y = tr.conv(x, f"{n}.branch2.0", half, 1)
            else:
                y = tr.conv(T(half, x.sp), f"{n}.branch2.0", half, 1)
            y = tr.conv(y, f"{n}.branch2.3", half, 3, 2 if i == 0 else 1, g=half)
            y = tr.conv(y, f"{n}.branch2.5", half, 1)
            x = tr.cat(b1 if i == 0 else T(half, y.sp), y)
    tr.conv(x, "conv5", 1024, 1)
    return tr


def mobilenet_v3_large():
    tr = Tracer("mobilenet_v3_large")
    x = tr.conv(T(3, (224, 224)), "features.0", 16, 3, 2)
    cfg = ((3, 16, 16, False, 1), (3, 64, 24, False, 2), (3, 72, 24, False, 1), (5, 72, 40, True, 2),
           (5, 120, 40, True, 1), (5, 120, 40, True, 1), (3, 240, 80, False, 2), (3, 200, 80, False, 1),
           (3, 184, 80, False, 1), (3, 184, 80, False, 1), (3, 480, 112, True, 1), (3, 672, 112, True, 1),
           (5, 672, 160, True, 2), (5, 960, 160, True, 1), (5, 960, 160, True, 1))
    for idx, (k, exp, out, se, s) in enumerate(cfg, start=1):
        n = f"features.{idx}"
        y = tr.conv(x, f"{n}.expand", exp, 1) if exp != x.c else x
        y = tr.conv(y, f"{n}.dw", exp, k, s, g=exp)
        if se:  # squeeze-excitation on the pooled 1x1 map
            tr.conv(tr.conv(T(exp, (1, 1)), f"{n}.se.fc1", _make_divisible(exp // 4), 1), f"{n}.se.fc2", exp, 1)
        x = tr.conv(y, f"{n}.project", out, 1)
    tr.conv(x, "features.16", 960, 1)
    return tr


def googlenet():
    """GoogLeNet (Inception v1) as torchvision builds it (its "5x5" branch uses a 3x3 kernel)."""
    tr = Tracer("googlenet")
    x = tr.pool(tr.conv(T(3, (224, 224)), "conv1", 64, 7, 2, 3), 3, 2, ceil=True)
    x = tr.pool(tr.conv(tr.conv(x, "conv2", 64, 1), "conv3", 192, 3), 3, 2, ceil=True)
    cfg = {"3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64), "4a": (192, 96, 208, 16, 48, 64),
           "4b": (160, 112, 224, 24, 64, 64), "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
           "4e": (256, 160, 320, 32, 128, 128), "5a": (256, 160, 320, 32, 128, 128),
           "5b": (384, 192, 384, 48, 128, 128)}
    for name, (c1, r3, c3, r5, c5, pp) in cfg.items():
        n = f"inception{name}"
        x = tr.cat(tr.conv(x, f"{n}.branch1", c1, 1), tr.conv(tr.conv(x, f"{n}.branch2.0", r3, 1), f"{n}.branch2.1", c3, 3),
                   tr.conv(tr.conv(x, f"{n}.branch3.0", r5, 1), f"{n}.branch3.1", c5, 3),
                   tr.conv(tr.pool(x, 3, 1, 1, ceil=True), f"{n}.branch4", pp, 1))
        if name in ("3b", "4e"):
            x = tr.pool(x, 3 if name == "3b" else 2, 2, ceil=True)
    return tr


def mc3_18():
    """Mixed 3-D/2-D video ResNet-18: a 3x7x7 stem and 3x3x3 layer1, then 1x3x3 convs (no temporal stride)."""
    tr = Tracer("mc3_18")
    x = tr.conv(T(3, (16, 112, 112)), "stem.0", 64, (3, 7, 7), (1, 2, 2), (1, 3, 3))
    for stage, planes in enumerate((64, 128, 256, 512), start=1):
        for b in range(2):
            s = 2 if (b == 0 and stage > 1) else 1
            n, k, pad = f"layer{stage}.{b}", (3 if stage == 1 else (1, 3, 3)), (1 if stage == 1 else (0, 1, 1))
            y = tr.conv(x, f"{n}.conv1", planes, k, (1, s, s), pad)
            y = tr.conv(y, f"{n}.conv2", planes, k, 1, pad)
            if s != 1 or x.c != planes:
                tr.conv(x, f"{n}.downsample", planes, 1, (1, s, s))
            x = y
    return tr


def wide_resnet50_2():
    return _resnet("wide_resnet50_2", "bottleneck", (3, 4, 6, 3), width_per_group=128)


def alexnet():
    tr = Tracer("alexnet")
    x = tr.pool(tr.conv(T(3, (224, 224)), "features.0", 64, 11, 4, 2), 3, 2)
    x = tr.pool(tr.conv(x, "features.3", 192, 5, 1, 2), 3, 2)
    x = tr.conv(tr.conv(x, "features.6", 384, 3), "features.8", 256, 3)
    tr.conv(x, "features.10", 256, 3)
    return tr


def regnet_y_800mf():
    """RegNetY-800MF: stages of depth (1, 3, 8, 2) and width (64, 144, 320, 784), group width 16,
    squeeze-excitation to a quarter of the block's input width."""
    tr = Tracer("regnet_y_800mf")
    x = tr.conv(T(3, (224, 224)), "stem.0", 32, 3, 2)
    for stage, (depth, w) in enumerate(zip((1, 3, 8, 2), (64, 144, 320, 784)), start=1):
        for b in range(depth):
            n, s, cin = f"trunk_output.block{stage}.block{stage}-{b}", 2 if b == 0 else 1, x.c
            if s != 1 or cin != w:
                tr.conv(x, f"{n}.proj", w, 1, s)
            y = tr.conv(x, f"{n}.f.a", w, 1)
            y = tr.conv(y, f"{n}.f.b", w, 3, s, g=w // 16)
            tr.conv(tr.conv(T(w, (1, 1)), f"{n}.f.se.fc1", int(round(0.25 * cin)), 1), f"{n}.f.se.fc2", w, 1)
            x = tr.conv(y, f"{n}.f.c", w, 1)
    return tr


def efficientnet_v2_s():
    """EfficientNetV2-S at 384: fused-MBConv stages (dense kxk expansion), then MBConv with squeeze-excitation."""
    tr = Tracer("efficientnet_v2_s")
    x = tr.conv(T(3, (384, 384)), "features.0", 24, 3, 2)
    cfg = (("fused", 1, 3, 1, 24, 2), ("fused", 4, 3, 2, 48, 4), ("fused", 4, 3, 2, 64, 4), ("mb", 4, 3, 2, 128, 6),
           ("mb", 6, 3, 1, 160, 9), ("mb", 6, 3, 2, 256, 15))
    for stage, (kind, t, k, s, c, n) in enumerate(cfg, start=1):
        for i in range(n):
            name, st, hidden = f"features.{stage}.{i}", s if i == 0 else 1, x.c * t
            if kind == "fused":
                y = tr.conv(x, f"{name}.fused", hidden if t != 1 else c, k, st)
                x = tr.conv(y, f"{name}.project", c, 1) if t != 1 else y
            else:
                y = tr.conv(tr.conv(x, f"{name}.expand", hidden, 1), f"{name}.dw", hidden, k, st, g=hidden)
                tr.conv(tr.conv(T(hidden, (1, 1)), f"{name}.se.fc1", max(1, x.c // 4), 1), f"{name}.se.fc2", hidden, 1)
                x = tr.conv(y, f"{name}.project", c, 1)
    tr.conv(x, "features.7", 1280, 1)
    return tr


def deeplabv3_resnet50():
    """DeepLabV3 at 520x520: ResNet-50 with layer3/layer4 dilated (2, 4) instead of strided (output
    stride 8), then ASPP (1x1, 3x3 at dilation 12/24/36, image pooling) and the head's 3x3 and 1x1."""
    tr = Tracer("deeplabv3_resnet50")
    x = tr.pool(tr.conv(T(3, (520, 520)), "backbone.conv1", 64, 7, 2, 3), 3, 2, 1)
    dilation = 1
    for stage, (blocks, planes) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512)), start=1):
        s, first_d = (2 if stage == 2 else 1), dilation
        if stage > 2:
            dilation *= 2
        for b in range(blocks):
            n, st, d = f"backbone.layer{stage}.{b}", s if b == 0 else 1, first_d if b == 0 else dilation
            y = tr.conv(tr.conv(x, f"{n}.conv1", planes, 1), f"{n}.conv2", planes, 3, st, d=d)
            y = tr.conv(y, f"{n}.conv3", planes * 4, 1)
            if b == 0:
                tr.conv(x, f"{n}.downsample", planes * 4, 1, st)
            x = y
    branches = [tr.conv(x, "classifier.0.convs.0", 256, 1)]
    branches += [tr.conv(x, f"classifier.0.convs.{i}", 256, 3, d=r) for i, r in enumerate((12, 24, 36), start=1)]
    tr.conv(T(x.c, (1, 1)), "classifier.0.convs.4", 256, 1)
    y = tr.conv(T(256 * 5, branches[0].sp), "classifier.0.project", 256, 1)
    tr.conv(tr.conv(y, "classifier.1", 256, 3), "classifier.4", 21, 1)
    return tr


def s3d():
    """S3D (torchvision) on 16x224x224 clips: temporally separable convs ((1,k,k) then (k,1,1)) in
    Inception blocks."""
    tr = Tracer("s3d")

    def sep(x, n, cout, k, s=1, p=None):
        p = k // 2 if p is None else p
        y = tr.conv(x, f"{n}.0", cout, (1, k, k), (1, s, s), (0, p, p))
        return tr.conv(y, f"{n}.1", cout, (k, 1, 1), (s, 1, 1), (p, 0, 0))

    x = sep(T(3, (16, 224, 224)), "features.0", 64, 7, 2, 3)
    x = tr.pool(x, (1, 3, 3), (1, 2, 2), (0, 1, 1))
    x = sep(tr.conv(x, "features.2", 64, 1), "features.3", 192, 3)
    x = tr.pool(x, (1, 3, 3), (1, 2, 2), (0, 1, 1))
    cfg = (("5", 64, 96, 128, 16, 32, 32), ("6", 128, 128, 192, 32, 96, 64), "pool3",
           ("8", 192, 96, 208, 16, 48, 64), ("9", 160, 112, 224, 24, 64, 64), ("10", 128, 128, 256, 24, 64, 64),
           ("11", 112, 144, 288, 32, 64, 64), ("12", 256, 160, 320, 32, 128, 128), "pool2",
           ("14", 256, 160, 320, 32, 128, 128), ("15", 384, 192, 384, 48, 128, 128))
    for c in cfg:
        if c == "pool3":
            x = tr.pool(x, 3, 2, 1)
            continue
        if c == "pool2":
            x = tr.pool(x, 2, 2)
            continue
        i, b0, b1m, b1, b2m, b2, b3 = c
        n = f"features.{i}"
        x = tr.cat(tr.conv(x, f"{n}.branch0", b0, 1), sep(tr.conv(x, f"{n}.branch1.0", b1m, 1), f"{n}.branch1.1", b1, 3),
                   sep(tr.conv(x, f"{n}.branch2.0", b2m, 1), f"{n}.branch2.1", b2, 3),
                   tr.conv(x, f"{n}.branch3.1", b3, 1))
    assert x.c == 1024, x
    return tr


def slowfast_r50():
    """SlowFast 8x8 R50 (Feichtenhofer et al. 2019; PyTorchVideo's slowfast_r50): a slow pathway on 8 frames and a fast
    one on 32 frames with 1/8 the channels, 224x224; temporal (3,1,1) convs in the fast pathway's every bottleneck
    and in the slow one's res4-res5, (5,1,1) stride-4 lateral convs concatenated into the slow pathway."""
    tr = Tracer("slowfast_r50")
    alpha, beta = 4, 8
    slow = tr.conv(T(3, (8, 224, 224)), "slow.stem", 64, (1, 7, 7), (1, 2, 2), (0, 3, 3))
    fast = tr.conv(T(3, (32, 224, 224)), "fast.stem", 64 // beta, (5, 7, 7), (1, 2, 2), (2, 3, 3))
    slow, fast = tr.pool(slow, (1, 3, 3), (1, 2, 2), (0, 1, 1)), tr.pool(fast, (1, 3, 3), (1, 2, 2), (0, 1, 1))

    def lateral(slow, fast, n):
        return tr.cat(slow, tr.conv(fast, f"{n}.lateral", 2 * fast.c, (5, 1, 1), (alpha, 1, 1), (2, 0, 0)))

    def bottleneck(x, n, inner, out, s, kt):
        y = tr.conv(x, f"{n}.conv_a", inner, (kt, 1, 1), 1, (kt // 2, 0, 0))
        y = tr.conv(y, f"{n}.conv_b", inner, (1, 3, 3), (1, s, s), (0, 1, 1))
        y = tr.conv(y, f"{n}.conv_c", out, 1)
        if s != 1 or x.c != out:
            tr.conv(x, f"{n}.branch1", out, 1, (1, s, s), 0)
        return y

    slow = lateral(slow, fast, "stem")
    for stage, (inner, blocks, kt_slow) in enumerate(((64, 3, 1), (128, 4, 1), (256, 6, 3), (512, 3, 3)), start=2):
        for b in range(blocks):
            s = 2 if (b == 0 and stage > 2) else 1
            slow = bottleneck(slow, f"slow.res{stage}.{b}", inner, 4 * inner, s, kt_slow)
            fast = bottleneck(fast, f"fast.res{stage}.{b}", inner // beta, 4 * inner // beta, s, 3)
        if stage < 5:
            slow = lateral(slow, fast, f"res{stage}")
    return tr


def x3d_m():
    """X3D-M (pytorchvideo) on 16x224x224 clips: a (1,3,3) stem and a (5,1,1) depthwise temporal conv, then
    bottlenecks whose middle conv is a 3x3x3 depthwise conv (expansion 2.25; spatial stride 2 in each stage's first)."""
    tr = Tracer("x3d_m")
    x = tr.conv(T(3, (16, 224, 224)), "stem.xy", 24, (1, 3, 3), (1, 2, 2), (0, 1, 1))
    x = tr.conv(x, "stem.t", 24, (5, 1, 1), 1, (2, 0, 0), g=24)
    for stage, (blocks, out) in enumerate(zip((3, 5, 11, 7), (24, 48, 96, 192)), start=1):
        inner = int(out * 2.25)
        for b in range(blocks):
            s = 2 if b == 0 else 1
            n = f"s{stage}.{b}"
            y = tr.conv(x, f"{n}.a", inner, 1)
            y = tr.conv(y, f"{n}.b", inner, 3, (1, s, s), 1, g=inner)
            y = tr.conv(y, f"{n}.c", out, 1)
            if b == 0:
                tr.conv(x, f"{n}.branch1", out, 1, (1, s, s), 0)
            x = y
    return tr


NETWORKS = {f.__name__: f for f in (resnet18, resnet34, resnet50, resnet101, resnext50, mobilenet_v2, convnext_t,
                                    convnext_s, efficientnet_b0, efficientnet_b3, vgg16, inception_v3, unet, r3d18,
                                    r2plus1d18, densenet121, shufflenet_v2, mobilenet_v3_large, googlenet, mc3_18,
                                    wide_resnet50_2, alexnet, regnet_y_800mf, efficientnet_v2_s, deeplabv3_resnet50, s3d,
                                    slowfast_r50, x3d_m)}
