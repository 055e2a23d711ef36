"""FLOPs of one operator for one sample, from its tensors' shapes (issue 13): pure formulas, ints in, int out.

FLOPs count 2 per multiply-accumulate, as data/seed/model_costs.csv does (the convention of the
papers' GFLOPs tables: ResNet-50 at 224 px is 2 x 4.1 G MACs = 8.2 GFLOPs). Bias adds and the
non-linearities of recurrent gates are left out: they are a few percent of the multiply-accumulates.
Shapes follow the ONNX operator specification (https://onnx.ai/onnx/operators/): Conv weights are
(Cout, Cin / group, k1, k2, ...), ConvTranspose weights (Cin, Cout / group, k1, ...), LSTM/GRU/RNN weights
W (directions, gates x hidden, input) and R (directions, gates x hidden, hidden).
"""

from __future__ import annotations

import math

#: weight matrices per recurrent cell: LSTM input, output, forget and cell gates; GRU update, reset and
#: hidden gates; a plain RNN one
RNN_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def conv_flops(out_elems: int, in_per_group: int, kernel: tuple[int, ...]) -> int:
    """FLOPs of a convolution: each output element (Cout x spatial, one sample) is a dot product over its
    group's input channels and the kernel window. 2 x out_elems x (Cin / group) x prod(kernel); FLOPs."""
    return 2 * out_elems * in_per_group * math.prod(kernel)


def conv_transpose_flops(in_elems: int, out_per_group: int, kernel: tuple[int, ...]) -> int:
    """FLOPs of a transposed convolution: each input element (Cin x spatial, one sample) is scattered into its
    group's output channels over the kernel window. 2 x in_elems x (Cout / group) x prod(kernel); FLOPs."""
    return 2 * in_elems * out_per_group * math.prod(kernel)


def matmul_flops(out_elems: int, inner: int) -> int:
    """FLOPs of MatMul or Gemm: each output element (broadcast batch dims included) is a dot product of length
    `inner` (K). 2 x out_elems x K; FLOPs."""
    return 2 * out_elems * inner


def rnn_flops(cell: str, directions: int, steps: int, batch: int, input_size: int, hidden: int) -> int:
    """FLOPs of an ONNX LSTM / GRU / RNN: per direction, step and sequence, each gate multiplies the input by W
    and the previous hidden state by R. 2 x gates x directions x steps x batch x hidden x (input + hidden);
    FLOPs."""
    return 2 * RNN_GATES[cell] * directions * steps * batch * hidden * (input_size + hidden)
