"""Per-sample tensor shapes of an uploaded ONNX graph (issue 13), every element count bounded.

The first dimension of each graph input is the batch; it is set to 1 (symbolic or not) so that every figure is
per sample, and ONNX shape inference (onnx.shape_inference.infer_shapes, on the proto: never a path) fills in
the rest. Shapes the file declares for intermediate tensors and outputs are dropped first: an exporter writes
them with the symbolic batch, which would survive inference beside the fixed one.
Data propagation stays off: it evaluates shape arithmetic in C++ with no size bound (a chain of Concats of a
constant doubles it per node: gigabytes from a small file), so a Reshape whose target is computed from Shape
is left unknown and named in the error (export with fixed shapes and constant folding).
Element counts are products of dimensions that a file may declare as large as 2**63: each product is bounded
as it is taken, so neither a huge allocation nor a float overflow can follow (MAX_ELEMS).
"""

from __future__ import annotations

from typing import Optional

from engine.estimator.onnx_intake import MAX_RANK, OnnxCostError, short
from engine.seed.cost_records import MAX_ELEMS

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
    del graph.value_info[:]
    for vi in graph.output:
        vi.type.tensor_type.ClearField("shape")


def infer(proto) -> dict[str, Shape]:
    """Tensor name -> shape after shape inference on a per-sample proto (per_sample ran); initializers included."""
    import onnx

    try:
        inferred = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False, data_prop=False)
    except Exception:  # InferenceError, or a ValueError from a proto the C++ side rejects
        raise OnnxCostError("ONNX shape inference failed on this graph (an inconsistent operator or shape)") \
            from None
    g = inferred.graph
    shapes: dict[str, Shape] = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            dims = vi.type.tensor_type.shape.dim
            if len(dims) > MAX_RANK:
                raise OnnxCostError(f"tensor {short(vi.name)} has {len(dims):,} dimensions; at most {MAX_RANK}")
            shapes[vi.name] = tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or "unknown")
                                    for d in dims)
    for t in g.initializer:
        shapes[t.name] = tuple(int(d) for d in t.dims)
    return shapes


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
