"""Speech models at the reference input of 7 s of audio (10 ms feature frames: 700 frames in).

Every operator is frame-wise (length power 1) except the Conformer's attention scores (power 2)."""

from __future__ import annotations

from tools.model_graphs.layers import Graph

REF_S = 7.0
FRAMES = 700  # 7 s at a 10 ms hop
CTC_SYMBOLS = 29  # 28 characters + blank (Jasper/QuartzNet)


def _jasper_block(g: Graph, pre, x, out_ch, k, repeat, separable, residual_inputs, s=1, d=1, stride_last=False,
                  se_ratio=0):
    """A Jasper/QuartzNet/Citrinet block (NeMo JasperBlock): `repeat` sub-blocks of conv (separable = depthwise +
    pointwise), BN, ReLU; on the last one an optional SE, then 1x1 conv + BN of each residual input is added before
    the last ReLU. Returns the block output shape."""
    for r in range(repeat):
        last = r == repeat - 1
        stride = s if (not stride_last or last) else 1
        if separable:
            x = g.conv1d(f"{pre}.{r}.dw", x, x[0], k, stride, d, groups=x[0])
            x = g.conv1d(f"{pre}.{r}.pw", x, out_ch, 1)
        else:
            x = g.conv1d(f"{pre}.{r}.conv", x, out_ch, k, stride, d)
        x = g.bn(f"{pre}.{r}.bn", x)
        if not last:
            x = g.act(f"{pre}.{r}.relu", x)
    if se_ratio:
        c = x[0]
        g.emit(f"{pre}.se.pool", "memory", x[0] * x[1], 0, x[0] * x[1], c, powers=(1, 1, 0),
               note="SE global average pool over time (a C-vector out, whatever the length)")
        g.emit(f"{pre}.se.fc1", "matmul", 2 * c * (c // se_ratio), c * (c // se_ratio), c, c // se_ratio,
               powers=(0, 0, 0), note="SE squeeze (no bias)")
        g.act(f"{pre}.se.relu", (c // se_ratio, 1))
        g.rows[-1].update(flops_len_power=0, in_len_power=0, out_len_power=0)
        g.emit(f"{pre}.se.fc2", "matmul", 2 * c * (c // se_ratio), c * (c // se_ratio), c // se_ratio, c,
               powers=(0, 0, 0), note="SE excite (no bias)")
        g.act(f"{pre}.se.sigmoid", (c, 1), "sigmoid")
        g.rows[-1].update(flops_len_power=0, in_len_power=0, out_len_power=0)
        x = g.mul(f"{pre}.se.scale", x, c)
    for j, rin in enumerate(residual_inputs):
        r = g.conv1d(f"{pre}.res{j}.conv", rin, out_ch, 1, s)
        g.bn(f"{pre}.res{j}.bn", r)
        x = g.add(f"{pre}.res{j}.add", x)
    return g.act(f"{pre}.relu", x)


def _ctc_decoder(g: Graph, x, classes):
    return g.conv1d("decoder", x, classes, 1, bias=True, note=f"CTC logits, {classes} classes")


def jasper() -> Graph:
    """Jasper 10x5 DR (dense residual): each block adds 1x1 conv + BN of every earlier block output (and the
    prolog's) to its last sub-block."""
    g = Graph("jasper", "Li et al. 2019 Jasper (10x5 DR); NeMo/DLE jasper10x5dr config; "
              "tools/model_graphs (this project)", ref_len=REF_S)
    x = g.conv1d("prolog.conv", (64, FRAMES), 256, 11, 2)
    x = g.bn("prolog.bn", x)
    x = g.act("prolog.relu", x)
    outs = [x]
    for b, (ch, k) in enumerate([(256, 11), (256, 11), (384, 13), (384, 13), (512, 17), (512, 17), (640, 21),
                                 (640, 21), (768, 25), (768, 25)], start=1):
        x = _jasper_block(g, f"B{b}", x, ch, k, 5, False, list(outs))
        outs.append(x)
    x = g.conv1d("epilog1.conv", x, 896, 29, 1, 2)
    x = g.act("epilog1.relu", g.bn("epilog1.bn", x))
    x = g.conv1d("epilog2.conv", x, 1024, 1)
    x = g.act("epilog2.relu", g.bn("epilog2.bn", x))
    _ctc_decoder(g, x, CTC_SYMBOLS)
    return g


def quartznet() -> Graph:
    """QuartzNet 10x5: time-channel separable convs (depthwise + pointwise), one 1x1 residual per block."""
    g = Graph("quartznet", "Kriman et al. 2020 QuartzNet (10x5); NeMo quartznet config; "
              "tools/model_graphs (this project)", ref_len=REF_S)
    x = g.conv1d("C1.dw", (64, FRAMES), 64, 33, 2, groups=64)
    x = g.conv1d("C1.pw", x, 256, 1)
    x = g.act("C1.relu", g.bn("C1.bn", x))
    for b, (ch, k) in enumerate([(256, 33), (256, 33), (256, 39), (256, 39), (512, 51), (512, 51), (512, 63),
                                 (512, 63), (512, 75), (512, 75)], start=1):
        x = _jasper_block(g, f"B{b}", x, ch, k, 5, True, [x])
    x = g.conv1d("C2.dw", x, 512, 87, 1, 2, groups=512)
    x = g.conv1d("C2.pw", x, 512, 1)
    x = g.act("C2.relu", g.bn("C2.bn", x))
    x = g.conv1d("C3.conv", x, 1024, 1)
    x = g.act("C3.relu", g.bn("C3.bn", x))
    _ctc_decoder(g, x, CTC_SYMBOLS)
    return g


def citrinet() -> Graph:
    """Citrinet-512 (NeMo citrinet_512.yaml): 80 mel features, prolog + 21 SE blocks of 5 separable sub-blocks
    (512 ch, kernels 11..39, stride 2 on the last sub-block of blocks 1, 7 and 14: 8x), epilog 640 ch kernel 41,
    SE reduction 8, CTC decoder over 1024 BPE tokens + blank."""
    g = Graph("citrinet", "Majumdar et al. 2021 Citrinet; NeMo citrinet_512.yaml / stt_en_citrinet_512; "
              "tools/model_graphs (this project)", ref_len=REF_S)
    x = _jasper_block(g, "prolog", (80, FRAMES), 512, 5, 1, True, [], se_ratio=8)
    kernels = [11, 13, 15, 17, 19, 21, 13, 15, 17, 19, 21, 23, 25, 25, 27, 29, 31, 33, 35, 37, 39]
    for b, k in enumerate(kernels, start=1):
        s = 2 if b in (1, 7, 14) else 1
        x = _jasper_block(g, f"B{b}", x, 512, k, 5, True, [x], s=s, stride_last=True, se_ratio=8)
    x = _jasper_block(g, "epilog", x, 640, 41, 1, True, [], se_ratio=8)
    _ctc_decoder(g, x, 1025)
    return g


def conformer() -> Graph:
    """Conformer-M (Gulati et al. 2020 Table 1): 80 mel features, 2 conv2d 3x3 stride 2 (4x subsampling,
    NeMo-style padding), 16 blocks of d_model 256, 4 heads, FFN 1024, conv kernel 31 (NeMo; the paper says 32).
    The paper's 30.7M counts its single-layer LSTM decoder (dim 640); it is kept as one transducer step per
    output frame (the upper bound of greedy decoding) plus the joint's encoder projection and output layer."""
    g = Graph("conformer", "Gulati et al. 2020 Conformer (M); NeMo conformer config; "
              "tools/model_graphs (this project)", ref_len=REF_S)
    d, heads, ffn, k = 256, 4, 1024, 31
    x = g.conv2d("subsampling.conv1", (1, FRAMES, 80), d, 3, 2, 1, bias=True)
    x = g.act("subsampling.relu1", x)
    x = g.conv2d("subsampling.conv2", x, d, 3, 2, 1, bias=True)
    x = g.act("subsampling.relu2", x)
    t = x[1]
    x = g.linear("subsampling.out", (t, d * x[2]), d, note="flattened channels x features -> d_model")
    for i in range(16):
        pre = f"layer{i}"
        x = _macaron_ffn(g, f"{pre}.ffn1", x, ffn)
        # relative-position multi-head self-attention (Transformer-XL style)
        y = g.layernorm(f"{pre}.attn.norm", x)
        g.linear(f"{pre}.attn.qkv", y, 3 * d, note="Q, K, V projections as one GEMM")
        g.linear(f"{pre}.attn.pos", (t, d), d, bias=False, note="relative position encodings projection")
        g.rows[-1]["weight_elems"] += 2 * d  # pos_bias_u, pos_bias_v (heads x d_head each)
        g.emit(f"{pre}.attn.qp", "attention", 2 * heads * t * t * (d // heads), 0, 2 * t * d, heads * t * t,
               powers=(2, 1, 2), note="Q x positional keys (relative-position scores, T x T after the shift)")
        o = g.attention(f"{pre}.attn", t, d, heads)
        o = g.linear(f"{pre}.attn.out", o, d)
        x = g.tadd(f"{pre}.attn.add", o)
        # convolution module: LN, pointwise 2d (GLU), depthwise k, BN, swish, pointwise, residual
        g.layernorm(f"{pre}.conv.norm", x)
        g.conv1d(f"{pre}.conv.pw1", (d, t), 2 * d, 1, bias=True)
        g.emit(f"{pre}.conv.glu", "memory", d * t, 0, 2 * d * t, d * t, kind="act", note="GLU")
        c = g.conv1d(f"{pre}.conv.dw", (d, t), d, k, groups=d, bias=True)
        c = g.bn(f"{pre}.conv.bn", c)
        c = g.act(f"{pre}.conv.swish", c, "swish")
        g.conv1d(f"{pre}.conv.pw2", c, d, 1, bias=True)
        x = g.tadd(f"{pre}.conv.add", (t, d))
        x = _macaron_ffn(g, f"{pre}.ffn2", x, ffn)
        x = g.layernorm(f"{pre}.norm_out", x)
    # transducer decoder (counted in the paper's 30.7M)
    g.emit("decoder.lstm", "matmul", 2 * t * 4 * 640 * (640 + 640), 4 * 640 * (640 + 640) + 2 * 4 * 640,
           t * 640 * 2, t * 640, note="prediction network: 1 LSTM layer dim 640, one step per output frame")
    j = g.linear("joint.enc", x, 640, note="joint network: encoder projection")
    j = g.tact("joint.tanh", j, "tanh")
    g.linear("joint.out", j, CTC_SYMBOLS, note="output layer (29 symbols assumed, as the other speech rows)")
    return g


def _macaron_ffn(g: Graph, pre, x, ffn):
    """Half-step feed-forward module: LN, linear d->4d, swish, linear 4d->d, x 0.5 residual add."""
    y = g.layernorm(f"{pre}.norm", x)
    y = g.linear(f"{pre}.in", y, ffn)
    y = g.tact(f"{pre}.swish", y, "swish")
    y = g.linear(f"{pre}.out", y, x[1])
    return g.tadd(f"{pre}.add", y)


BUILDERS = [jasper, quartznet, citrinet, conformer]
