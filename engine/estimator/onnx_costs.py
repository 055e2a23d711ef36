"""Per-operator cost table of an uploaded ONNX model (issue 13): FLOPs, weights and activations per node.

The file is hostile input: onnx_intake refuses what is not read (external data, control flow, unknown
operators, oversized graphs), onnx_shapes infers per-sample shapes with every product bounded, and this module
turns each node into an OpCostRow (engine/seed/cost_records.py), in graph order:
- Conv / ConvTranspose: conv, or depthwise when group == input channels > 1 (op_flops.conv_flops).
- Gemm / MatMul: matmul when an operand is a constant (its weights), attention when both are activations
  (QK^T, AV); broadcast batch dimensions are in the output's element count (op_flops.matmul_flops).
- LSTM / GRU / RNN: matmul (op_flops.rnn_flops).
- anything else: memory-bound, one operation per output element.
Constants are initializers and Constant nodes' values; a Constant node is no kernel and has no row.
weight_elems = the node's constant inputs, in_elems = its other inputs, out_elems = its outputs (elements),
leaving out a secondary output that nothing reads (Dropout's mask): engines never write it, and ONNX shape
inference often leaves its shape unknown.
`fusable` marks the epilogues an inference engine folds into the conv or matmul before them (TensorRT's
and cuDNN's conv/GEMM epilogue fusions): batch norm, Relu, Clip, Sigmoid, HardSigmoid, HardSwish, an Add or
Mul by a constant (bias, scale), and a residual Add (or two-input Sum), when the activation they read comes
straight from a conv or matmul or from another epilogue fused after one.
"""

from __future__ import annotations

from engine.estimator import op_flops
from engine.estimator.onnx_intake import OnnxCostError, check_name, parse, refuse_unsafe, short
from engine.estimator.onnx_shapes import elems, infer, per_sample, total
from engine.seed.cost_records import MAX_OP_FLOPS, OpCostRow
from engine.vocab import OpClass

__all__ = ["OnnxCostError", "costs_from_onnx"]

#: operators whose outputs an epilogue can be fused into (recurrent cells are excluded: cuDNN runs them whole)
COMPUTE_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
#: element-wise operators an engine folds into the kernel before them
EPILOGUE_OPS = {"BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish"}


def costs_from_onnx(data: bytes, model: str, max_bytes: int) -> tuple[OpCostRow, ...]:
    """The cost rows of an ONNX model given as the file's bytes: one per node but Constant, in graph order, for
    one sample. Raises OnnxCostError (a KneepointError) naming the problem for any file it does not read."""
    check_name(model)
    proto = parse(data, max_bytes)
    refuse_unsafe(proto)
    graph = proto.graph
    per_sample(graph)
    shapes = infer(proto)
    constants = {t.name for t in graph.initializer} | {o for n in graph.node if n.op_type == "Constant"
                                                       for o in n.output}
    read = {t for n in graph.node for t in n.input} | {vi.name for vi in graph.output}
    chain: set[str] = set()  # tensors written by a conv or matmul, or by an epilogue fused into one
    rows: list[OpCostRow] = []
    source = f"uploaded ONNX ({model})"
    for index, node in enumerate(graph.node):
        if node.op_type == "Constant":
            continue
        label = node.name or f"{node.op_type}_{index}"
        ins = [t for t in node.input if t]
        outs = [t for i, t in enumerate(node.output) if t and (i == 0 or t in read)]
        acts = [t for t in ins if t not in constants]
        size = {t: elems(shapes.get(t), t, label) for t in ins + outs}
        what = f"node {short(label)}"
        weights = total([size[t] for t in ins if t in constants], f"the weights of {what}")
        in_elems = total([size[t] for t in acts], f"the inputs of {what}")
        out_elems = total([size[t] for t in outs], f"the outputs of {what}")
        op_class, flops = _class_and_flops(node, ins, constants, shapes, size, out_elems)
        if flops > MAX_OP_FLOPS:
            raise OnnxCostError(f"{what} needs {flops:.3g} FLOPs per sample, over the {MAX_OP_FLOPS:.0e} limit")
        fusable = _fusable(node.op_type, acts, len(ins) - len(acts), chain)
        if node.op_type in COMPUTE_OPS or fusable:
            chain.update(outs)
        rows.append(OpCostRow(source=source, model=model, op=len(rows), name=short(label, 80), op_class=op_class,
                              flops=float(flops), weight_elems=float(weights), in_elems=float(in_elems),
                              out_elems=float(out_elems), fusable=fusable, note=node.op_type))
    if not rows:
        raise OnnxCostError("the graph has no operators to estimate (only constants)")
    return tuple(rows)


def _class_and_flops(node, ins: list[str], constants: set, shapes: dict, size: dict,
                     out_elems: int) -> tuple[OpClass, int]:
    """The node's class and FLOPs per sample; shapes are known and bounded (onnx_shapes.elems ran on each)."""
    op = node.op_type
    first_out = size[node.output[0]] if node.output and node.output[0] else 0
    if op in ("Conv", "ConvTranspose") and len(ins) >= 2:
        x, w = shapes[ins[0]], shapes[ins[1]]
        if len(x) < 3 or len(w) != len(x):
            raise OnnxCostError(f"{op} {short(node.name or op)} has input and weight ranks that do not match")
        if op == "Conv":
            flops = op_flops.conv_flops(first_out, w[1], w[2:])
        else:
            flops = op_flops.conv_transpose_flops(size[ins[0]], w[1], w[2:])
        group = _int_attr(node, "group", 1)
        return (OpClass.DEPTHWISE if 1 < group == x[1] else OpClass.CONV), flops
    if op in ("Gemm", "MatMul") and len(ins) >= 2:
        a = shapes[ins[0]]
        if not a:
            raise OnnxCostError(f"{op} {short(node.name or op)} multiplies a scalar")
        inner = a[0] if op == "Gemm" and _int_attr(node, "transA", 0) else a[-1]
        weighted = ins[0] in constants or ins[1] in constants
        return (OpClass.MATMUL if weighted else OpClass.ATTENTION), op_flops.matmul_flops(first_out, inner)
    if op in op_flops.RNN_GATES and len(ins) >= 3:
        x, r = shapes[ins[0]], shapes[ins[2]]
        if len(x) != 3 or len(r) != 3:
            raise OnnxCostError(f"{op} {short(node.name or op)} has inputs of the wrong rank")
        steps, batch = (x[1], x[0]) if _int_attr(node, "layout", 0) else (x[0], x[1])
        return OpClass.MATMUL, op_flops.rnn_flops(op, r[0], steps, batch, x[2], r[2])
    return OpClass.MEMORY, out_elems


def _fusable(op: str, acts: list[str], n_constants: int, chain: set) -> bool:
    """Whether an engine folds this node into the conv or matmul it follows (module docstring)."""
    if op in EPILOGUE_OPS or (op in ("Add", "Mul") and n_constants and len(acts) == 1):
        return bool(acts) and acts[0] in chain
    if op in ("Add", "Sum") and len(acts) == 2:  # residual (Sum in old Caffe2 exports); either operand order
        return any(t in chain for t in acts)
    return False


def _int_attr(node, name: str, default: int) -> int:
    for a in node.attribute:
        if a.name == name and a.type == a.INT:
            return a.i
    return default
