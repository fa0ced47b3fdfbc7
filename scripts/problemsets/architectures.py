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


NETWORKS = {f.__name__: f for f in (resnet18, resnet34, resnet50, resnet101, resnext50, mobilenet_v2, convnext_t,
                                    convnext_s, efficientnet_b0, efficientnet_b3, vgg16, inception_v3, unet, r3d18,
                                    r2plus1d18)}
