"""Vision models at 3x224x224 (LeNet-5 at 1x28x28), layer for layer as torchvision (or the paper) builds them."""

from __future__ import annotations

from tools.model_graphs.layers import Graph

IMG = (3, 224, 224)
TV = "torchvision.models {} definition; tools/model_graphs (this project)"


def _conv_bn_act(g: Graph, name, x, out_ch, k, s=1, p=None, groups=1, fn="relu"):
    x = g.conv2d(f"{name}.conv", x, out_ch, k, s, k // 2 if p is None else p, groups=groups)
    x = g.bn(f"{name}.bn", x)
    return g.act(f"{name}.{fn}", x, fn) if fn else x


def _make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's _make_divisible: round to a multiple of 8, never more than 10% down."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


# ----------------------------------------------------------------------------- ResNet / ResNeXt
def _resnet(model, source, block, layers, groups=1, width_per_group=64) -> Graph:
    g = Graph(model, source)
    x = _conv_bn_act(g, "conv1", IMG, 64, 7, 2, 3)
    x = g.pool2d("maxpool", x, 3, 2, 1)
    inplanes = 64
    for li, (planes, n) in enumerate(zip((64, 128, 256, 512), layers), start=1):
        for bi in range(n):
            s = 2 if (bi == 0 and li > 1) else 1
            pre = f"layer{li}.{bi}"
            identity = x
            if block == "basic":
                out_ch = planes
                y = _conv_bn_act(g, f"{pre}.1", x, planes, 3, s)
                y = _conv_bn_act(g, f"{pre}.2", y, planes, 3, 1, fn=None)
            else:  # bottleneck, torchvision v1.5 (stride on the 3x3)
                out_ch = planes * 4
                width = int(planes * (width_per_group / 64.0)) * groups
                y = _conv_bn_act(g, f"{pre}.1", x, width, 1, 1, 0)
                y = _conv_bn_act(g, f"{pre}.2", y, width, 3, s, 1, groups=groups)
                y = _conv_bn_act(g, f"{pre}.3", y, out_ch, 1, 1, 0, fn=None)
            if s != 1 or inplanes != out_ch:
                _conv_bn_act(g, f"{pre}.downsample", identity, out_ch, 1, s, 0, fn=None)
            y = g.add(f"{pre}.add", y)
            x = g.act(f"{pre}.relu", y)
            inplanes = out_ch
    x = g.global_pool("avgpool", x)
    g.linear("fc", x, 1000, powers=(0, 0, 0))
    return g


def resnet50() -> Graph:
    return _resnet("resnet50", "He et al. 2016 ResNet; " + TV.format("resnet50"), "bottleneck", (3, 4, 6, 3))


def resnet18() -> Graph:
    return _resnet("resnet18", "He et al. 2016 ResNet; " + TV.format("resnet18"), "basic", (2, 2, 2, 2))


def resnext50() -> Graph:
    return _resnet("resnext50", "Xie et al. 2017 ResNeXt; " + TV.format("resnext50_32x4d"), "bottleneck",
                   (3, 4, 6, 3), groups=32, width_per_group=4)


# ----------------------------------------------------------------------------- squeeze-excitation (matmul FCs)
def _se(g: Graph, name, x, squeeze, fn1="relu", fn2="sigmoid"):
    """SE block: global pool (memory), two 1x1 convs on a C-vector (tiny matmuls), gate, broadcast scale."""
    c = x[0]
    v = g.global_pool(f"{name}.pool", x)
    v = g.linear(f"{name}.fc1", v, squeeze, powers=(0, 0, 0))
    v = g.act(f"{name}.{fn1}", v, fn1)
    v = g.linear(f"{name}.fc2", v, c, powers=(0, 0, 0))
    v = g.act(f"{name}.{fn2}", v, fn2)
    return g.mul(f"{name}.scale", x, c)


# ----------------------------------------------------------------------------- EfficientNet-B0
def efficientnet_b0() -> Graph:
    g = Graph("efficientnet-b0", "Tan & Le 2019 EfficientNet; " + TV.format("efficientnet_b0"))
    x = _conv_bn_act(g, "stem", IMG, 32, 3, 2, fn="silu")
    cfg = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
           (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]
    for si, (e, k, s0, cin, cout, n) in enumerate(cfg, start=1):
        for bi in range(n):
            s, inp = (s0, cin) if bi == 0 else (1, cout)
            pre = f"features.{si}.{bi}"
            y = x
            exp = inp * e
            if e != 1:
                y = _conv_bn_act(g, f"{pre}.expand", y, exp, 1, fn="silu")
            y = _conv_bn_act(g, f"{pre}.dw", y, exp, k, s, groups=exp, fn="silu")
            y = _se(g, f"{pre}.se", y, max(1, inp // 4), "silu", "sigmoid")
            y = _conv_bn_act(g, f"{pre}.project", y, cout, 1, fn=None)
            if s == 1 and inp == cout:
                y = g.add(f"{pre}.add", y)
            x = y
    x = _conv_bn_act(g, "head", x, 1280, 1, fn="silu")
    x = g.global_pool("avgpool", x)
    g.linear("classifier", x, 1000, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- MobileNetV3-small
def mobilenet_v3_small() -> Graph:
    g = Graph("mobilenetv3-small", "Howard et al. 2019 MobileNetV3; " + TV.format("mobilenet_v3_small"))
    x = _conv_bn_act(g, "stem", IMG, 16, 3, 2, fn="hardswish")
    cfg = [(16, 3, 16, 16, True, "relu", 2), (16, 3, 72, 24, False, "relu", 2),
           (24, 3, 88, 24, False, "relu", 1), (24, 5, 96, 40, True, "hardswish", 2),
           (40, 5, 240, 40, True, "hardswish", 1), (40, 5, 240, 40, True, "hardswish", 1),
           (40, 5, 120, 48, True, "hardswish", 1), (48, 5, 144, 48, True, "hardswish", 1),
           (48, 5, 288, 96, True, "hardswish", 2), (96, 5, 576, 96, True, "hardswish", 1),
           (96, 5, 576, 96, True, "hardswish", 1)]
    for i, (cin, k, exp, cout, se, fn, s) in enumerate(cfg, start=1):
        pre = f"features.{i}"
        y = x
        if exp != cin:
            y = _conv_bn_act(g, f"{pre}.expand", y, exp, 1, fn=fn)
        y = _conv_bn_act(g, f"{pre}.dw", y, exp, k, s, groups=exp, fn=fn)
        if se:
            y = _se(g, f"{pre}.se", y, _make_divisible(exp // 4), "relu", "hardsigmoid")
        y = _conv_bn_act(g, f"{pre}.project", y, cout, 1, fn=None)
        if s == 1 and cin == cout:
            y = g.add(f"{pre}.add", y)
        x = y
    x = _conv_bn_act(g, "lastconv", x, 576, 1, fn="hardswish")
    x = g.global_pool("avgpool", x)
    x = g.linear("classifier.0", x, 1024, powers=(0, 0, 0))
    x = g.act("classifier.1", x, "hardswish")
    g.linear("classifier.3", x, 1000, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- MobileNet v1 (PARIS [41])
def mobilenet_v1() -> Graph:
    g = Graph("mobilenet-v1", "Howard et al. 2017 MobileNets (arXiv:1704.04861) Table 1; "
              "tools/model_graphs (this project)")
    x = _conv_bn_act(g, "conv1", IMG, 32, 3, 2)
    cfg = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]
    for i, (cout, s) in enumerate(cfg, start=1):
        x = _conv_bn_act(g, f"block{i}.dw", x, x[0], 3, s, groups=x[0])
        x = _conv_bn_act(g, f"block{i}.pw", x, cout, 1)
    x = g.global_pool("avgpool", x)
    g.linear("fc", x, 1000, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- SqueezeNet 1.1
def squeezenet1_1() -> Graph:
    g = Graph("squeezenet1.1", "Iandola et al. 2016 SqueezeNet; " + TV.format("squeezenet1_1"))

    def conv_relu(name, x, out_ch, k, s=1, p=0):
        x = g.conv2d(f"{name}", x, out_ch, k, s, p, bias=True)
        return g.act(f"{name}.relu", x)

    x = conv_relu("features.0", IMG, 64, 3, 2)
    fires = {3: (16, 64), 4: (16, 64), 6: (32, 128), 7: (32, 128), 9: (48, 192), 10: (48, 192),
             11: (64, 256), 12: (64, 256)}
    for i in range(2, 13):
        if i in (2, 5, 8):
            x = g.pool2d(f"features.{i}", x, 3, 2, ceil=True)
            continue
        sq, ex = fires[i]
        s = conv_relu(f"features.{i}.squeeze", x, sq, 1)
        a = conv_relu(f"features.{i}.expand1x1", s, ex, 1)
        b = conv_relu(f"features.{i}.expand3x3", s, ex, 3, 1, 1)
        x = g.concat(f"features.{i}.cat", [a, b])
    x = conv_relu("classifier.1", x, 1000, 1)
    g.global_pool("classifier.3", x)
    return g


# ----------------------------------------------------------------------------- ShuffleNet v2 x1.0
def shufflenet_v2() -> Graph:
    g = Graph("shufflenet-v2", "Ma et al. 2018 ShuffleNet V2; " + TV.format("shufflenet_v2_x1_0"))
    x = _conv_bn_act(g, "conv1", IMG, 24, 3, 2)
    x = g.pool2d("maxpool", x, 3, 2, 1)
    for si, (out_ch, n) in enumerate(zip((116, 232, 464), (4, 8, 4)), start=2):
        bf = out_ch // 2
        for bi in range(n):
            pre = f"stage{si}.{bi}"
            if bi == 0:
                b1 = _conv_bn_act(g, f"{pre}.branch1.dw", x, x[0], 3, 2, groups=x[0], fn=None)
                b1 = _conv_bn_act(g, f"{pre}.branch1.pw", b1, bf, 1)
                b2 = x
            else:
                half = (x[0] // 2,) + tuple(x[1:])
                b1, b2 = half, half  # chunk(2): a view, no copy
            b2 = _conv_bn_act(g, f"{pre}.branch2.pw1", b2, bf, 1)
            b2 = _conv_bn_act(g, f"{pre}.branch2.dw", b2, bf, 3, 2 if bi == 0 else 1, groups=bf, fn=None)
            b2 = _conv_bn_act(g, f"{pre}.branch2.pw2", b2, bf, 1)
            x = g.concat(f"{pre}.cat", [b1, b2])
            x = g.shuffle(f"{pre}.shuffle", x)
    x = _conv_bn_act(g, "conv5", x, 1024, 1)
    x = g.global_pool("mean", x)
    g.linear("fc", x, 1000, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- AlexNet, VGG-19
def alexnet() -> Graph:
    g = Graph("alexnet", "Krizhevsky 2014 'one weird trick' AlexNet; " + TV.format("alexnet"))
    x = IMG
    for i, (c, k, s, p, pool) in enumerate([(64, 11, 4, 2, True), (192, 5, 1, 2, True), (384, 3, 1, 1, False),
                                             (256, 3, 1, 1, False), (256, 3, 1, 1, True)], start=1):
        x = g.conv2d(f"conv{i}", x, c, k, s, p, bias=True)
        x = g.act(f"conv{i}.relu", x)
        if pool:
            x = g.pool2d(f"pool{i}", x, 3, 2)
    x = g.adaptive_pool("avgpool", x, 6)
    v = (x[0] * x[1] * x[2],)
    for i, n in enumerate((4096, 4096), start=1):
        v = g.linear(f"fc{i}", v, n, powers=(0, 0, 0))
        v = g.act(f"fc{i}.relu", v)
    g.linear("fc3", v, 1000, powers=(0, 0, 0))
    return g


def vgg19() -> Graph:
    g = Graph("vgg19", "Simonyan & Zisserman 2015 VGG (config E); " + TV.format("vgg19"))
    x = IMG
    cfg = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"]
    i = 0
    for v in cfg:
        i += 1
        if v == "M":
            x = g.pool2d(f"features.pool{i}", x, 2, 2)
        else:
            x = g.conv2d(f"features.conv{i}", x, v, 3, 1, 1, bias=True)
            x = g.act(f"features.conv{i}.relu", x)
    x = g.adaptive_pool("avgpool", x, 7)
    v = (x[0] * x[1] * x[2],)
    for i, n in enumerate((4096, 4096), start=1):
        v = g.linear(f"classifier.fc{i}", v, n, powers=(0, 0, 0))
        v = g.act(f"classifier.fc{i}.relu", v)
    g.linear("classifier.fc3", v, 1000, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- LeNet-5 (MNIST)
def lenet() -> Graph:
    """LeNet-5 on 1x28x28: conv 5x5 pad 2 (6), pool, conv 5x5 (16), pool, FC 400-120-84-10; fully connected C3
    (the 1998 paper's partial C3 table is not what TVM runs)."""
    g = Graph("lenet", "LeCun et al. 1998 LeNet-5 (MNIST 1x28x28); tools/model_graphs (this project)")
    x = g.conv2d("conv1", (1, 28, 28), 6, 5, 1, 2, bias=True)
    x = g.act("conv1.relu", x)
    x = g.pool2d("pool1", x, 2, 2)
    x = g.conv2d("conv2", x, 16, 5, 1, 0, bias=True)
    x = g.act("conv2.relu", x)
    x = g.pool2d("pool2", x, 2, 2)
    v = (x[0] * x[1] * x[2],)
    v = g.linear("fc1", v, 120, powers=(0, 0, 0))
    v = g.act("fc1.relu", v)
    v = g.linear("fc2", v, 84, powers=(0, 0, 0))
    v = g.act("fc2.relu", v)
    g.linear("fc3", v, 10, powers=(0, 0, 0))
    return g


# ----------------------------------------------------------------------------- Swin-T
def swin_t() -> Graph:
    g = Graph("swin-t", "Liu et al. 2021 Swin Transformer; " + TV.format("swin_t"))
    fixed = (0, 0, 0)
    x = g.conv2d("patch_embed", IMG, 96, 4, 4, 0, bias=True)
    res = x[1]
    t = (res * res, 96)
    t = g.layernorm("patch_embed.norm", t)
    win = 7
    for si, (depth, heads) in enumerate(zip((2, 2, 6, 2), (3, 6, 12, 24))):
        dim = t[1]
        for bi in range(depth):
            pre = f"stage{si}.{bi}"
            shifted = bi % 2 == 1 and res > win  # torchvision drops the shift when one window covers the map
            y = g.layernorm(f"{pre}.norm1", t)
            if shifted:
                g.emit(f"{pre}.roll", "memory", 0, 0, t[0] * dim, t[0] * dim, powers=fixed, note="cyclic shift")
            g.linear(f"{pre}.attn.qkv", y, 3 * dim, powers=fixed)
            windows = (res // win) ** 2
            # relative-position bias table: (2*7-1)^2 x heads learned values, added to the scores in softmax
            g.rows[-1]["weight_elems"] += (2 * win - 1) ** 2 * heads
            g.rows[-1]["note"] = "qkv projection; weights include the relative-position bias table"
            o = g.attention(f"{pre}.attn", win * win, dim, heads, windows=windows, len_scaled=False,
                            note="window attention Q K^T (7x7 windows)")
            o = g.linear(f"{pre}.attn.proj", o, dim, powers=fixed)
            if shifted:
                g.emit(f"{pre}.unroll", "memory", 0, 0, t[0] * dim, t[0] * dim, powers=fixed,
                       note="reverse cyclic shift")
            t = g.tadd(f"{pre}.add1", o)
            y = g.layernorm(f"{pre}.norm2", t)
            y = g.linear(f"{pre}.mlp.fc1", y, 4 * dim, powers=fixed)
            y = g.tact(f"{pre}.mlp.gelu", y, "gelu")
            y = g.linear(f"{pre}.mlp.fc2", y, dim, powers=fixed)
            t = g.tadd(f"{pre}.add2", y)
        if si < 3:  # patch merging: 2x2 neighbours concatenated (4C), layer norm, linear 4C -> 2C
            res //= 2
            g.emit(f"stage{si}.merge.gather", "memory", 0, 0, t[0] * dim, t[0] * dim, powers=fixed,
                   note="2x2 patch gather")
            t = (res * res, 4 * dim)
            t = g.layernorm(f"stage{si}.merge.norm", t)
            t = g.linear(f"stage{si}.merge.reduction", t, 2 * dim, bias=False, powers=fixed)
    t = g.layernorm("norm", t)
    g.emit("avgpool", "memory", t[0] * t[1], 0, t[0] * t[1], t[1], powers=fixed, note="global average pool")
    g.linear("head", (t[1],), 1000, powers=fixed)
    return g


BUILDERS = [resnet50, resnet18, resnext50, efficientnet_b0, mobilenet_v3_small, mobilenet_v1, squeezenet1_1,
            shufflenet_v2, alexnet, vgg19, lenet, swin_t]
