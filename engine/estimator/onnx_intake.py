"""Reading an uploaded ONNX file as hostile input (issue 13): what is refused before any shape is computed.

The file comes from a user of the hosted app, so it is parsed from bytes only and never from a path, and
everything that would make the server open a file, run control flow or operators nobody knows, or blow up
shape inference is refused here, each with a message that says what to change when exporting:
- more than `max_bytes` bytes (checked before parsing) or bytes that are not a model;
- tensors stored outside the file (external data: their location names a path on the server);
- control flow (If, Loop, Scan: a subgraph per attribute) and model-local functions (they may call each other);
- an IR version or opset newer than the installed onnx reads, operators outside the standard domain or not
  defined at the model's opset (their shapes cannot be inferred, their cost is unknown);
- more than MAX_OPS_PER_MODEL nodes, and inputs, constants or shape attributes of more than MAX_RANK dimensions
  (shape inference copies every dimension of every tensor: a rank of millions would cost gigabytes; the ranks
  shape inference makes are bounded in onnx_shapes).
Error messages never repeat the file's content: a name taken from it is cut to a few plain characters.
"""

from __future__ import annotations

import re

from engine.errors import KneepointError
from engine.seed.cost_records import MAX_OPS_PER_MODEL

#: a model's name becomes a catalogue name: short, plain characters
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,39}$")
#: the most dimensions of one tensor; real networks stay under 8 (Swin's window partition uses 6)
MAX_RANK = 16
#: the operator domains whose operators onnx's shape inference and this module's counting know
STANDARD_DOMAINS = ("", "ai.onnx")
#: attributes whose length is a tensor's rank (RandomNormal's shape, Unsqueeze's axes, Transpose's perm)
RANK_ATTRIBUTES = ("shape", "axes", "perm")


class OnnxCostError(KneepointError):
    """An ONNX file that cannot be read into a cost table; the message says why (never the file's content)."""


def short(text: object, limit: int = 40) -> str:
    """A name taken from the file as a message or a row shows it: plain characters only, at most `limit`."""
    text = re.sub(r"[^A-Za-z0-9._/:-]", "?", str(text)[:limit + 1])
    return text if len(text) <= limit else text[:limit] + "..."


def check_name(model: object) -> str:
    """The model's name, when it is fit to be a catalogue name."""
    if not isinstance(model, str) or not NAME_PATTERN.match(model):
        raise OnnxCostError("the model name must be 2-40 letters, digits, '.', '_' or '-', starting with a letter "
                            "or digit")
    return model


def parse(data: object, max_bytes: int):
    """The ModelProto of the file's bytes; the size is checked before protobuf sees them."""
    import onnx

    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise OnnxCostError("the ONNX model must be given as the file's bytes")
    size = len(data)
    if size > max_bytes:
        raise OnnxCostError(f"the file is {size / 1e6:,.1f} MB, over the {max_bytes / 1e6:,.1f} MB limit")
    if not size:
        raise OnnxCostError("the file is empty")
    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(bytes(data))
    except Exception:  # protobuf's DecodeError, and its recursion-limit and UTF-8 errors on crafted input
        raise OnnxCostError("this is not an ONNX model: the file does not parse as one") from None
    if not proto.HasField("graph") or not len(proto.graph.node):
        raise OnnxCostError("this is not an ONNX model with a graph: no nodes found")
    return proto


def refuse_unsafe(proto) -> None:
    """Raise OnnxCostError for the first thing in the model this app does not read (module docstring)."""
    graph = proto.graph
    if len(graph.node) > MAX_OPS_PER_MODEL:
        raise OnnxCostError(f"the graph has {len(graph.node):,} nodes; at most {MAX_OPS_PER_MODEL:,} are read")
    if len(proto.functions):
        raise OnnxCostError("the model defines its own functions; export it with functions inlined")
    for tensor in list(graph.initializer) + [t for s in graph.sparse_initializer for t in (s.values, s.indices)]:
        _refuse_external(tensor)
        _refuse_rank(len(tensor.dims), f"initializer {short(tensor.name)}")
    for vi in graph.input:
        if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
            _refuse_rank(len(vi.type.tensor_type.shape.dim), f"input {short(vi.name)}")
    for node in graph.node:
        _refuse_attributes(node)
    _refuse_unknown_operators(proto)


def _refuse_external(tensor) -> None:
    import onnx

    if tensor.data_location == onnx.TensorProto.EXTERNAL or len(tensor.external_data):
        raise OnnxCostError("external-data models are not accepted: this model keeps tensors in separate files, "
                            "which are never opened here. Export it with the weights embedded in the .onnx file")


def _refuse_rank(rank: int, what: str) -> None:
    if rank > MAX_RANK:
        raise OnnxCostError(f"{what} has {rank:,} dimensions; at most {MAX_RANK} are read")


def _refuse_attributes(node) -> None:
    import onnx

    kind = onnx.AttributeProto
    for a in node.attribute:
        if a.type in (kind.GRAPH, kind.GRAPHS) or len(a.graphs) or a.HasField("g"):
            raise OnnxCostError(f"node {short(node.name or node.op_type)} ({short(node.op_type)}) holds a subgraph; "
                                "control flow (If, Loop, Scan) is not estimated: export a graph without it")
        tensors = list(a.tensors) + [a.t] * a.HasField("t")
        tensors += [t for s in list(a.sparse_tensors) + [a.sparse_tensor] * a.HasField("sparse_tensor")
                    for t in (s.values, s.indices)]
        for t in tensors:
            _refuse_external(t)
            _refuse_rank(len(t.dims), f"a constant of node {short(node.name or node.op_type)}")
        if a.name in RANK_ATTRIBUTES:
            _refuse_rank(len(a.ints), f"attribute {a.name} of node {short(node.name or node.op_type)}")


def _refuse_unknown_operators(proto) -> None:
    import onnx

    if proto.ir_version > onnx.IR_VERSION:
        raise OnnxCostError(f"the model's IR version {proto.ir_version} is newer than the {onnx.IR_VERSION} this "
                            "app reads: export it with an older onnx")
    opsets = {o.domain: o.version for o in proto.opset_import}
    version = opsets.get("", opsets.get("ai.onnx"))
    newest = onnx.defs.onnx_opset_version()
    if version is None or version < 1:
        raise OnnxCostError("the model declares no standard ONNX opset")
    if version > newest:
        raise OnnxCostError(f"the model uses ONNX opset {version}, newer than the {newest} this app reads: "
                            f"export it at opset {newest} or lower")
    for node in proto.graph.node:
        if node.domain not in STANDARD_DOMAINS:
            raise OnnxCostError(f"node {short(node.name or node.op_type)} uses an operator of domain "
                                f"{short(node.domain)}; only standard ONNX operators are estimated")
        try:
            onnx.defs.get_schema(node.op_type, version, "")
        except onnx.defs.SchemaError:
            raise OnnxCostError(f"operator {short(node.op_type)} is not a standard ONNX operator at opset "
                                f"{version}") from None
