"""Per-operator cost table of an uploaded ONNX model (issue 13): FLOPs, weights and activations per node.

The file is hostile input: it is parsed from bytes only, never from a path, and a model whose tensors live
in external files is refused (such a file names paths on the server). Sizes are bounded before anything is
inflated: the file's bytes, the node count (MAX_OPS_PER_MODEL), and every tensor's element count
(MAX_ELEMS). Shapes come from ONNX shape inference with the batch dimension set to 1, so every figure is
per sample; any other dimension left symbolic is named in the error.

Counting (FLOPs = 2 per multiply-accumulate, as in data/seed/model_costs.csv):
- Conv: 2 x Cout x prod(out spatial) x (Cin / groups) x prod(kernel); groups == Cin > 1 is depthwise.
- Gemm / MatMul: 2 x M x K x N over the broadcast batch; an initializer operand makes it a matmul with
  weights, two activations make it attention (QK^T, AV).
- LSTM / GRU / RNN: gates x 2 x steps x hidden x (input + hidden), a matmul.
- Anything else: memory-bound, one operation per output element.
"""

from __future__ import annotations

import math
import re
from typing import Optional

from engine.errors import KneepointError
from engine.seed.cost_records import MAX_ELEMS, MAX_OP_FLOPS, MAX_OPS_PER_MODEL, OpCostRow
from engine.vocab import OpClass

#: a model's name becomes a catalogue name: short, plain characters
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,39}$")
#: nodes whose work is folded into the conv or matmul before them by inference engines
FUSABLE_OPS = {"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "LeakyRelu", "Add",
               "Mul", "Gelu", "Tanh", "Erf", "Div", "Sub"}
COMPUTE_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "LSTM", "GRU", "RNN"}
SUBGRAPH_OPS = {"If", "Loop", "Scan"}
_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


class OnnxCostError(KneepointError):
    """An ONNX file that cannot be read into a cost table; the message says why (never the file's content)."""


def _check_name(model: str) -> str:
    if not isinstance(model, str) or not NAME_PATTERN.match(model):
        raise OnnxCostError("the model name must be 2-40 letters, digits, '.', '_' or '-', starting with a letter "
                            "or digit")
    return model


def _parse(data: bytes, max_bytes: int):
    import onnx

    if not isinstance(data, (bytes, bytearray)):
        raise OnnxCostError("the ONNX model must be given as the file's bytes")
    if len(data) > max_bytes:
        raise OnnxCostError(f"the file is {len(data) / 1e6:,.1f} MB, over the {max_bytes / 1e6:,.0f} MB limit")
    if not data:
        raise OnnxCostError("the file is empty")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(bytes(data))
    except Exception:  # protobuf raises DecodeError and, on some corrupt input, RuntimeWarning-like errors
        raise OnnxCostError("this is not an ONNX model: the file does not parse as one") from None
    if not proto.HasField("graph") or not len(proto.graph.node):
        raise OnnxCostError("this is not an ONNX model with a graph: no nodes found")
    return proto


def _refuse_external_and_subgraphs(graph) -> None:
    import onnx

    if len(graph.node) > MAX_OPS_PER_MODEL:
        raise OnnxCostError(f"the graph has {len(graph.node):,} nodes; at most {MAX_OPS_PER_MODEL:,} are read")
    for t in graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL or len(t.external_data):
            raise OnnxCostError("the model keeps its weights in external files; those are never opened here. "
                                "Export it with the weights inside the .onnx file")
    for node in graph.node:
        for a in node.attribute:
            if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) or node.op_type in SUBGRAPH_OPS:
                raise OnnxCostError(f"node {_short(node.name or node.op_type)} ({node.op_type}) holds a subgraph; "
                                    "control flow (If, Loop, Scan) is not estimated")
            if a.type == onnx.AttributeProto.TENSOR and (a.t.data_location == onnx.TensorProto.EXTERNAL
                                                         or len(a.t.external_data)):
                raise OnnxCostError("the model keeps a constant in an external file; those are never opened here")


def _short(text: str, limit: int = 40) -> str:
    text = re.sub(r"[^A-Za-z0-9._/:-]", "?", str(text))
    return text if len(text) <= limit else text[:limit] + "..."


def _fix_batch(graph) -> None:
    """Set the first dimension of every graph input to 1 (costs are per sample)."""
    inits = {t.name for t in graph.initializer}
    for vi in graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        dims = vi.type.tensor_type.shape.dim
        if len(dims):
            dims[0].ClearField("dim_param")
            dims[0].dim_value = 1


def _shapes(proto) -> dict[str, tuple]:
    """name -> shape (ints or symbolic strings) after shape inference; initializers included."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False)
    except Exception:
        raise OnnxCostError("ONNX shape inference failed on this graph (an unsupported or inconsistent operator)") \
            from None
    g = inferred.graph
    shapes: dict[str, tuple] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                                    for d in vi.type.tensor_type.shape.dim)
    for t in g.initializer:
        shapes[t.name] = tuple(int(d) for d in t.dims)
    return shapes


def _elems(shape: Optional[tuple], what: str) -> float:
    if shape is None:
        return 0.0
    for i, d in enumerate(shape):
        if not isinstance(d, int):
            raise OnnxCostError(f"{_short(what)} has a symbolic dimension {i} ({_short(str(d))}) besides the batch; "
                                "set a fixed sequence length when exporting")
        if d < 0:
            raise OnnxCostError(f"{_short(what)} has a negative dimension")
    n = float(math.prod(shape)) if shape else 1.0
    if n > MAX_ELEMS:
        raise OnnxCostError(f"{_short(what)} has {n:.3g} elements, over the {MAX_ELEMS:.0g} limit")
    return n


def _attr(node, name: str, default):
    for a in node.attribute:
        if a.name == name:
            return a.i if a.type == 2 else list(a.ints) if a.type == 7 else default
    return default


def _node_cost(node, shapes: dict, inits: set) -> tuple[OpClass, float, float]:
    """(class, FLOPs per sample, weight elements) of one node."""
    ins = [i for i in node.input if i]
    weights = sum(_elems(shapes.get(i), i) for i in ins if i in inits)
    outs = [o for o in node.output if o]
    out = _elems(shapes.get(outs[0]), outs[0]) if outs else 0.0
    op = node.op_type
    if op in ("Conv", "ConvTranspose") and len(ins) >= 2:
        w = shapes.get(ins[1])
        x = shapes.get(ins[0])
        if w is None or x is None or len(w) < 3:
            raise OnnxCostError(f"conv {_short(node.name or op)} has no known weight shape")
        group = int(_attr(node, "group", 1) or 1)
        cin_per_group, k = w[1], math.prod(w[2:])
        if op == "Conv":
            flops = 2.0 * out * cin_per_group * k
        else:  # each input element scatters into Cout/group x kernel outputs
            flops = 2.0 * _elems(x, ins[0]) * (w[1]) * k
        cls = OpClass.DEPTHWISE if group > 1 and group == x[1] and cin_per_group == 1 else OpClass.CONV
        return cls, flops, weights
    if op in ("MatMul", "Gemm") and len(ins) >= 2:
        a, b = shapes.get(ins[0]), shapes.get(ins[1])
        if a is None or b is None or not a or not b:
            raise OnnxCostError(f"{op} {_short(node.name or op)} has operands of unknown shape")
        if op == "Gemm":
            k = a[0] if _attr(node, "transA", 0) else a[-1]
        else:
            k = a[-1]
        flops = 2.0 * out * float(k)
        cls = OpClass.MATMUL if (ins[0] in inits or ins[1] in inits) else OpClass.ATTENTION
        return cls, flops, weights
    if op in _GATES and len(ins) >= 3:
        x, r = shapes.get(ins[0]), shapes.get(ins[2])
        if x is None or r is None:
            raise OnnxCostError(f"{op} {_short(node.name or op)} has inputs of unknown shape")
        steps, inp = x[0], x[-1]
        dirs, hidden = r[0], r[-1]
        flops = 2.0 * _GATES[op] * dirs * steps * hidden * (inp + hidden)
        return OpClass.MATMUL, flops, weights
    return OpClass.MEMORY, out, weights


def costs_from_onnx(data: bytes, model: str, max_bytes: int) -> tuple[OpCostRow, ...]:
    """The cost rows of an ONNX model given as bytes: one per node, in graph order, per sample."""
    _check_name(model)
    proto = _parse(data, max_bytes)
    graph = proto.graph
    _refuse_external_and_subgraphs(graph)
    _fix_batch(graph)
    shapes = _shapes(proto)
    inits = {t.name for t in graph.initializer} | {n.output[0] for n in graph.node if n.op_type == "Constant"}
    producer: dict[str, str] = {}
    fused_from: set[str] = set()  # tensors written by a compute node or by an epilogue already fused into one
    rows = []
    source = f"uploaded ONNX ({model})"
    for i, node in enumerate(graph.node):
        if node.op_type == "Constant":
            continue
        cls, flops, weights = _node_cost(node, shapes, inits)
        acts = [x for x in node.input if x and x not in inits]
        in_elems = sum(_elems(shapes.get(x), x) for x in acts)
        out_elems = sum(_elems(shapes.get(o), o) for o in node.output if o)
        if flops > MAX_OP_FLOPS:
            raise OnnxCostError(f"node {_short(node.name or node.op_type)} needs {flops:.3g} FLOPs per sample, "
                                f"over the {MAX_OP_FLOPS:.0g} limit")
        fusable = node.op_type in FUSABLE_OPS and bool(acts) and acts[0] in fused_from
        if node.op_type in COMPUTE_OPS or fusable:
            fused_from.update(o for o in node.output if o)
        for o in node.output:
            producer[o] = node.op_type
        rows.append(OpCostRow(source=source, model=model, op=len(rows), name=_short(node.name or f"{node.op_type}_{i}", 80),
                              op_class=cls, flops=flops, weight_elems=weights, in_elems=in_elems,
                              out_elems=out_elems, fusable=fusable, note=node.op_type))
    if not rows:
        raise OnnxCostError("the graph has no operators to estimate")
    return tuple(rows)
