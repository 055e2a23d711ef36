"""Per-sample tensor shapes of an uploaded ONNX graph (issue 13), every element count bounded.

The first dimension of each graph input is the batch; it is set to 1 (symbolic or not) so that every figure is
per sample, and ONNX shape inference fills in the rest one node at a time (onnx.shape_inference.
infer_node_outputs, on protos in memory: never a path), each output's rank bounded before the next node (infer).
Shapes the file declares for intermediate tensors are not read: an exporter writes them with the symbolic batch.
Nothing is evaluated: onnx's data propagation would compute shape arithmetic in C++ with no size bound (a chain
of Concats of a constant doubles it per node: gigabytes from a small file), so a Reshape whose target is
computed from Shape is left unknown and named in the error (export with fixed shapes and constant folding).
Element counts are products of dimensions that a file may declare as large as 2**63: each product is bounded
as it is taken, so neither a huge allocation nor a float overflow can follow (MAX_ELEMS).
"""

from __future__ import annotations

from typing import Optional

from engine.estimator.onnx_intake import MAX_RANK, OnnxCostError, short
from engine.seed.cost_records import MAX_ELEMS

#: the most elements of a constant handed to shape inference as data: shape, axes, pads, scales and sizes
#: operands hold one or two per dimension, and copying a weight's data for each node that reads it would cost
#: its size times its readers
MAX_SHAPE_DATA = 256
#: operators whose operand (by position) has the output's rank as its length
RANK_OPERAND = {"Reshape": 1, "Expand": 1, "ConstantOfShape": 0, "Unsqueeze": 1, "Col2Im": 1, "MaxUnpool": 2}

Shape = tuple  # dims: ints, or a string for a dimension inference left symbolic or unknown


def per_sample(graph) -> None:
    """Batch dimension of every graph input set to 1; another symbolic input dimension is an error naming it."""
    constants = {t.name for t in graph.initializer}
    for vi in graph.input:
        if vi.name in constants:  # IR < 4 lists initializers among the inputs; they have no batch
            continue
        tensor = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or not tensor.HasField("shape"):
            raise OnnxCostError(f"input {short(vi.name)} has no declared shape; export with fixed input shapes")
        dims = tensor.shape.dim
        if len(dims):
            dims[0].Clear()
            dims[0].dim_value = 1
        for i, d in enumerate(dims):
            if not d.HasField("dim_value") or d.dim_value < 0:
                label = short(d.dim_param) if d.dim_param else "unknown"
                raise OnnxCostError(f"input {short(vi.name)} has a symbolic dimension {i} ({label}) besides the "
                                    "batch; set a fixed sequence length when exporting")


def infer(proto) -> dict[str, Shape]:
    """Tensor name -> shape on a per-sample proto (per_sample ran), inferred node by node in graph order.

    Node by node, not onnx.shape_inference.infer_shapes on the whole graph, so that every tensor is bounded
    before the next node sees it: a chain of Gathers of a tensor by itself doubles its rank per node, and whole-
    graph inference of a 700-byte file of 26 of them aborts the process on memory (nothing to catch). Here a
    shape operand longer than MAX_RANK is refused before its node is inferred, and any output of more than
    MAX_RANK dimensions right after."""
    import onnx

    graph = proto.graph
    opsets = list(proto.opset_import)
    versions = {o.domain: o.version for o in opsets}
    version = versions.get("", versions.get("ai.onnx"))  # onnx_intake made sure there is one
    types: dict = {vi.name: vi.type for vi in graph.input}
    data: dict = {}
    for t in graph.initializer:
        types[t.name] = onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
        if _small(t.dims):
            data[t.name] = t
    for index, node in enumerate(graph.node):
        label = node.name or f"{node.op_type}_{index}"
        ins = [t for t in node.input if t]
        missing = [t for t in ins if t not in types]
        if missing:
            raise OnnxCostError(f"node {short(label)} reads tensor {short(missing[0])}, which no input, initializer "
                                "or earlier node provides (the graph must be in topological order)")
        _refuse_rank_operand(node, types, label)
        try:
            outs = onnx.shape_inference.infer_node_outputs(
                onnx.defs.get_schema(node.op_type, version, ""), node, {t: types[t] for t in ins},
                {t: data[t] for t in ins if t in data}, opset_imports=opsets,
                ir_version=proto.ir_version or onnx.IR_VERSION)
        except Exception:  # InferenceError, or a ValueError from a node the C++ side rejects
            raise OnnxCostError(f"ONNX shape inference failed at node {short(label)} ({node.op_type}): an "
                                "inconsistent operator or shape") from None
        for name, type_ in outs.items():
            rank = len(type_.tensor_type.shape.dim) if type_.HasField("tensor_type") else 0
            if rank > MAX_RANK:
                raise OnnxCostError(f"node {short(label)} ({node.op_type}) makes a tensor of {rank} dimensions; at "
                                    f"most {MAX_RANK} are read")
            types[name] = type_
        if node.op_type == "Constant":
            data.update(_constant_data(node))
    shapes: dict[str, Shape] = {}
    for name, type_ in types.items():
        if type_.HasField("tensor_type") and type_.tensor_type.HasField("shape"):
            shapes[name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "unknown")
                                 for d in type_.tensor_type.shape.dim)
    return shapes


def _small(dims) -> bool:
    """Whether a constant is small enough to hand to shape inference as data (MAX_SHAPE_DATA)."""
    n = 1
    for d in dims:
        n *= max(int(d), 0)
        if n > MAX_SHAPE_DATA:
            return False
    return True


def _constant_data(node) -> dict:
    """A Constant node's value as shape inference reads it (a Reshape's target, a Slice's bounds), when small."""
    from onnx import TensorProto, helper

    out = {}
    for a in node.attribute:
        if a.name == "value" and _small(a.t.dims):
            out[node.output[0]] = a.t
        elif a.name in ("value_ints", "value_int") and _small([len(a.ints)]):
            values = list(a.ints) if a.name == "value_ints" else [a.i]
            dims = [len(values)] if a.name == "value_ints" else []
            out[node.output[0]] = helper.make_tensor(node.output[0], TensorProto.INT64, dims, values)
    return out


def _refuse_rank_operand(node, types: dict, label: str) -> None:
    """An operand whose length becomes the output's rank (a Reshape's target) may be at most MAX_RANK long."""
    position = RANK_OPERAND.get(node.op_type)
    if position is None or len(node.input) <= position or not node.input[position]:
        return
    dims = types[node.input[position]].tensor_type.shape.dim
    if len(dims) == 1 and dims[0].HasField("dim_value") and dims[0].dim_value > MAX_RANK:
        raise OnnxCostError(f"node {short(label)} ({node.op_type}) asks for {dims[0].dim_value:,} dimensions; at "
                            f"most {MAX_RANK} are read")


def elems(shape: Optional[Shape], tensor: str, node: str) -> int:
    """Elements of one tensor of `node`; an error when its shape is unknown, negative or over MAX_ELEMS."""
    where = f"tensor {short(tensor)} of node {short(node)}"
    if shape is None:
        raise OnnxCostError(f"shape inference found no tensor shape for {where}; export with fixed input shapes "
                            "(sequences and maps are not estimated)")
    for i, d in enumerate(shape):
        if not isinstance(d, int) or d < 0:
            raise OnnxCostError(f"shape inference left dimension {i} of {where} unknown; export with fixed input "
                                "shapes (no dynamic axes besides the batch) and constant folding")
    if 0 in shape:
        return 0
    return bounded_product(shape, where)


def bounded_product(factors, what: str) -> int:
    """The product of non-negative ints, raising as soon as it passes MAX_ELEMS (never a 1000-digit int)."""
    n = 1
    for f in factors:
        n *= int(f)
        if n > MAX_ELEMS:
            raise OnnxCostError(f"{what} has more than {MAX_ELEMS:.0e} elements, over the limit")
    return n


def total(counts, what: str, limit: float = MAX_ELEMS) -> int:
    """The sum of a node's element counts, bounded like each one."""
    n = sum(counts)
    if n > limit:
        raise OnnxCostError(f"{what} adds up to {n:.3g} elements, over the {limit:.0e} limit")
    return n
