"""Shape-tracking layer helpers that emit one cost row per operator (no torch, no numpy).

A `Graph` collects the rows of one model in graph order. Each helper takes the input shape, appends the
operator's row and returns the output shape, so a builder reads like the model definition it copies.

Conventions (the units of engine.seed.cost_records.OpCostRow):
- flops: per sample, 2 per multiply-accumulate for conv/matmul/attention. Memory-bound operators carry a rough
  element-wise operation count (1 per output element; 2 for batch norm's scale and shift; ~5 per element for
  softmax and layer norm): the estimator charges them by the bytes they move, so these counts are indicative.
- weight_elems: learned parameters, bias included in its conv or linear; batch/layer norm count scale and shift
  (2 per channel; running statistics are not parameters); an embedding table counts whole.
- in_elems / out_elems: activation elements per sample read and written.
- Shapes: images (C, H, W); 1-D sequences (C, T) for speech convs; token tensors (T, D).
- Length scaling (variable-length models): a row's columns scale as (len / ref_len) ** power; token- and
  frame-wise operators use power 1, attention score tensors power 2.
"""

from __future__ import annotations

import math
from typing import Optional

#: operator kinds an inference engine folds into the conv or matmul before them (TensorRT-style fusion)
FUSABLE_KINDS = ("bias", "bn", "act", "add")
#: classes that produce a tensor an epilogue can be fused into
COMPUTE_CLASSES = ("conv", "depthwise", "matmul")


def prod(shape) -> int:
    return math.prod(shape)


def conv_out(size: int, k: int, s: int, p: int, d: int = 1, ceil: bool = False) -> int:
    """Output length of a conv or pool along one axis (PyTorch's formula; `ceil` for ceil_mode pools)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:  # PyTorch: the last window must start inside the input
        out -= 1
    return out


class Graph:
    """The operator rows of one model, in graph order."""

    def __init__(self, model: str, source: str, ref_len: Optional[float] = None):
        self.model = model
        self.source = source
        self.ref_len = ref_len
        self.rows: list[dict] = []
        self._fuse_open = False  # is the previous operator a conv/matmul or an epilogue already fused into one?

    # ------------------------------------------------------------------ the one place rows are made
    def emit(self, name: str, op_class: str, flops: float, weights: float, in_elems: float, out_elems: float,
             kind: str = "", powers: tuple[int, int, int] = (1, 1, 1), note: str = "") -> None:
        """Append one row; `kind` in FUSABLE_KINDS marks an epilogue, fused when it follows a conv/matmul."""
        fusable = kind in FUSABLE_KINDS and self._fuse_open
        if op_class in COMPUTE_CLASSES:
            self._fuse_open = True
        elif not fusable:
            self._fuse_open = False
        fp, ip, op = powers if self.ref_len is not None else (0, 0, 0)
        self.rows.append(dict(
            source=self.source, model=self.model, op=len(self.rows), name=name, op_class=op_class,
            flops=float(flops), weight_elems=float(weights), in_elems=float(in_elems), out_elems=float(out_elems),
            ref_len=self.ref_len, flops_len_power=fp, in_len_power=ip, out_len_power=op, fusable=fusable,
            note=note))

    # ------------------------------------------------------------------ 2-D vision layers (C, H, W)
    def conv2d(self, name, x, out_ch, k, s=1, p=0, groups=1, bias=False, note=""):
        c, h, w = x
        kh, kw = (k, k) if isinstance(k, int) else k
        ph, pw = (p, p) if isinstance(p, int) else p
        oh, ow = conv_out(h, kh, s, ph), conv_out(w, kw, s, pw)
        macs_per_out = (c // groups) * kh * kw
        y = (out_ch, oh, ow)
        weights = out_ch * macs_per_out + (out_ch if bias else 0)
        cls = "depthwise" if groups == c and groups > 1 else "conv"
        self.emit(name, cls, 2 * macs_per_out * prod(y), weights, prod(x), prod(y), note=note)
        return y

    def bn(self, name, x):
        self.emit(name, "memory", 2 * prod(x), 2 * x[0], prod(x), prod(x), kind="bn")
        return x

    def act(self, name, x, fn="relu"):
        self.emit(name, "memory", prod(x), 0, prod(x), prod(x), kind="act", note=fn)
        return x

    def add(self, name, x):
        """Residual add: reads both operands."""
        self.emit(name, "memory", prod(x), 0, 2 * prod(x), prod(x), kind="add")
        return x

    def mul(self, name, x, gate_elems):
        """Broadcast multiply (squeeze-excitation scale): reads the tensor and the gate."""
        self.emit(name, "memory", prod(x), 0, prod(x) + gate_elems, prod(x), note="scale")
        return x

    def pool2d(self, name, x, k, s, p=0, ceil=False, fn="max"):
        c, h, w = x
        y = (c, conv_out(h, k, s, p, ceil=ceil), conv_out(w, k, s, p, ceil=ceil))
        self.emit(name, "memory", k * k * prod(y), 0, prod(x), prod(y), note=f"{fn} pool {k}x{k}/{s}")
        return y

    def global_pool(self, name, x):
        """Global average pool to (C,)."""
        self.emit(name, "memory", prod(x), 0, prod(x), x[0], note="global average pool")
        return (x[0],)

    def adaptive_pool(self, name, x, out_hw):
        y = (x[0], out_hw, out_hw)
        self.emit(name, "memory", prod(x), 0, prod(x), prod(y), note=f"adaptive average pool to {out_hw}x{out_hw}")
        return y

    def concat(self, name, parts):
        total = sum(prod(p) for p in parts)
        y = (sum(p[0] for p in parts),) + tuple(parts[0][1:])
        self.emit(name, "memory", 0, 0, total, total, note="concat")
        return y

    def shuffle(self, name, x):
        self.emit(name, "memory", 0, 0, prod(x), prod(x), note="channel shuffle")
        return x

    # ------------------------------------------------------------------ token-wise layers (T, D) or vectors
    def linear(self, name, x, out_f, bias=True, powers=(1, 1, 1), note=""):
        """A linear layer over the last axis; x is (..., in_f)."""
        in_f = x[-1]
        rows = prod(x[:-1])
        y = tuple(x[:-1]) + (out_f,)
        self.emit(name, "matmul", 2 * rows * in_f * out_f, in_f * out_f + (out_f if bias else 0),
                  prod(x), prod(y), powers=powers, note=note)
        return y

    def layernorm(self, name, x):
        self.emit(name, "memory", 5 * prod(x), 2 * x[-1], prod(x), prod(x), note="layer norm")
        return x

    def tact(self, name, x, fn):
        """Token-wise activation (GELU, swish, ...): a fusable epilogue."""
        self.emit(name, "memory", prod(x), 0, prod(x), prod(x), kind="act", note=fn)
        return x

    def tadd(self, name, x):
        self.emit(name, "memory", prod(x), 0, 2 * prod(x), prod(x), kind="add")
        return x

    def attention(self, name, tokens, dim, heads, windows=1, len_scaled=True, note=""):
        """Scaled dot-product attention over `windows` groups of `tokens` tokens (Swin: windows of 49 tokens).

        Emits QK^T, softmax (scale, mask and relative-position bias folded in) and AV. Flops of QK^T and AV are
        2 x heads x tokens^2 x head_dim per window; score tensors hold heads x tokens^2 elements."""
        dh = dim // heads
        scores = windows * heads * tokens * tokens
        qkv = windows * tokens * dim
        mm = 2 * windows * heads * tokens * tokens * dh
        sq = (2, 1, 2) if len_scaled else (0, 0, 0)
        self.emit(f"{name}.qk", "attention", mm, 0, 2 * qkv, scores, powers=sq, note=note or "Q K^T")
        self.emit(f"{name}.softmax", "memory", 5 * scores, 0, scores, scores,
                  powers=(2, 2, 2) if len_scaled else (0, 0, 0), note="scale + mask/bias + softmax")
        # AV reads the scores (heads x T^2, the larger operand at reference length) and V (T x D)
        self.emit(f"{name}.av", "attention", mm, 0, scores + qkv, qkv,
                  powers=(2, 2, 1) if len_scaled else (0, 0, 0),
                  note="scores x V; in_elems = scores + V, scaled as the scores (power 2)")
        return (windows * tokens, dim)

    # ------------------------------------------------------------------ 1-D speech layers (C, T)
    def conv1d(self, name, x, out_ch, k, s=1, d=1, groups=1, bias=False, note=""):
        c, t = x
        p = d * (k - 1) // 2  # "same" padding, as Jasper/QuartzNet/Citrinet use
        y = (out_ch, conv_out(t, k, s, p, d))
        macs_per_out = (c // groups) * k
        cls = "depthwise" if groups == c and groups > 1 else "conv"
        self.emit(name, cls, 2 * macs_per_out * prod(y), out_ch * macs_per_out + (out_ch if bias else 0),
                  prod(x), prod(y), note=note)
        return y

    def bn1d(self, name, x):
        return self.bn(name, x)
