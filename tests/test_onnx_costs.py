"""ONNX upload -> cost table (engine.estimator.onnx_costs): exact counts on small graphs, hostile files refused."""

import builtins

import numpy as np
import onnx
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper, numpy_helper

from engine.estimator.onnx_costs import OnnxCostError, costs_from_onnx
from engine.seed.cost_records import MAX_OPS_PER_MODEL
from engine.vocab import OpClass

MB = 10 * 1024 * 1024


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _model(nodes, inputs, outputs, inits, opset=17) -> bytes:
    g = helper.make_graph(nodes, "g", inputs, outputs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()


def classifier(cout=8, k=3, batch="N") -> bytes:
    """Conv(3->cout, k x k, pad 1) -> BN -> Relu -> GlobalAveragePool -> Flatten -> Gemm(cout->10) on 3x16x16."""
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[k // 2] * 4, name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "FC", "FB"], ["y"], transB=1, name="fc")]
    inits = [_init("W", (cout, 3, k, k)), _init("B", (cout,)), _init("s", (cout,)), _init("b", (cout,)),
             _init("m", (cout,)), _init("v", (cout,)), _init("FC", (10, cout)), _init("FB", (10,))]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 16, 16])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])], inits)


def attention(seq=32, d=16) -> bytes:
    """Q = xWq, K = xWk; scores = Q K^T; softmax; out = scores V (V = x)."""
    nodes = [helper.make_node("MatMul", ["x", "Wq"], ["q"]), helper.make_node("MatMul", ["x", "Wk"], ["k"]),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["q", "kt"], ["s"]), helper.make_node("Softmax", ["s"], ["a"], axis=-1),
             helper.make_node("MatMul", ["a", "x"], ["y"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, d])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, d])],
                  [_init("Wq", (d, d)), _init("Wk", (d, d))])


def test_a_small_classifier_is_counted_exactly():
    rows = costs_from_onnx(classifier(), "tiny-cnn", MB)
    by = {r.name: r for r in rows}
    assert by["conv"].op_class == OpClass.CONV
    assert by["conv"].flops == 2 * 8 * 16 * 16 * 3 * 9  # 2 x Cout x Hout x Wout x Cin x k x k
    assert by["conv"].weight_elems == 8 * 3 * 9 + 8
    assert (by["conv"].in_elems, by["conv"].out_elems) == (3 * 16 * 16, 8 * 16 * 16)
    assert by["bn"].fusable and by["relu"].fusable and not by["pool"].fusable
    assert by["fc"].op_class == OpClass.MATMUL and by["fc"].flops == 2 * 8 * 10 and by["fc"].weight_elems == 90
    assert [r.op for r in rows] == list(range(len(rows)))


def test_attention_matmuls_without_weights_are_attention():
    rows = costs_from_onnx(attention(), "tiny-attn", MB)
    mm = [r for r in rows if r.note == "MatMul"]
    assert [r.op_class for r in mm] == [OpClass.MATMUL, OpClass.MATMUL, OpClass.ATTENTION, OpClass.ATTENTION]
    assert mm[2].flops == 2 * 32 * 32 * 16 and mm[3].flops == 2 * 32 * 16 * 32
    assert mm[0].weight_elems == 16 * 16 and mm[2].weight_elems == 0


def test_depthwise_conv_is_depthwise():
    nodes = [helper.make_node("Conv", ["x", "W"], ["y"], group=4, pads=[1, 1, 1, 1], name="dw")]
    data = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [_init("W", (4, 1, 3, 3))])
    (row,) = costs_from_onnx(data, "dw", MB)
    assert row.op_class == OpClass.DEPTHWISE and row.flops == 2 * 4 * 8 * 8 * 9


@settings(max_examples=30, deadline=None)
@given(cin=st.integers(1, 8), cout=st.integers(1, 8), k=st.sampled_from([1, 3, 5]), size=st.integers(5, 12),
       stride=st.integers(1, 2))
def test_conv_flops_follow_the_formula(cin, cout, k, size, stride):
    nodes = [helper.make_node("Conv", ["x", "W"], ["y"], strides=[stride, stride], name="c")]
    data = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", cin, size, size])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [_init("W", (cout, cin, k, k))])
    (row,) = costs_from_onnx(data, "cv", MB)
    out = (size - k) // stride + 1
    assert row.flops == 2 * cout * out * out * cin * k * k


@pytest.mark.parametrize("data, match", [
    (b"\x00\x01garbage" * 10, "not an ONNX model"),
    (classifier()[:40], "not an ONNX model"),
    (b"", "empty"),
])
def test_broken_files_are_named_not_raised(data, match):
    with pytest.raises(OnnxCostError, match=match):
        costs_from_onnx(data, "bad", MB)


def test_a_file_over_the_limit_is_refused_before_parsing():
    with pytest.raises(OnnxCostError, match="over the 0 MB limit"):
        costs_from_onnx(classifier(), "big", 100)


def test_external_data_is_never_opened(monkeypatch):
    m = onnx.load_from_string(classifier())
    w = m.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="/etc/passwd")
    opened = []
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(f) or real_open(f, *a, **k))
    with pytest.raises(OnnxCostError, match="external files; those are never opened"):
        costs_from_onnx(m.SerializeToString(), "ext", MB)
    assert "/etc/passwd" not in [str(f) for f in opened]


def test_a_symbolic_sequence_length_is_named():
    nodes = [helper.make_node("MatMul", ["x", "W"], ["y"])]
    data = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "seq", 4])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [_init("W", (4, 4))])
    with pytest.raises(OnnxCostError, match="symbolic dimension 1 .seq. besides the batch; set a fixed sequence"):
        costs_from_onnx(data, "seq", MB)


def test_a_huge_dimension_is_refused_without_allocating():
    nodes = [helper.make_node("Relu", ["x"], ["y"])]
    data = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10 ** 12, 10])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [])
    with pytest.raises(OnnxCostError, match="elements, over the 1e\\+12 limit"):
        costs_from_onnx(data, "huge", MB)


def test_too_many_nodes_are_refused():
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"]) for i in range(MAX_OPS_PER_MODEL + 1)]
    data = _model(nodes, [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
                  [helper.make_tensor_value_info(f"t{MAX_OPS_PER_MODEL + 1}", TensorProto.FLOAT, [1, 4])], [])
    with pytest.raises(OnnxCostError, match=f"{MAX_OPS_PER_MODEL + 1:,} nodes"):
        costs_from_onnx(data, "deep", 100 * MB)


def test_control_flow_is_refused():
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "t", [],
                             [helper.make_tensor_value_info("o", TensorProto.FLOAT, [1])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=then, name="branch")]
    data = _model(nodes, [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                          helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], [])
    with pytest.raises(OnnxCostError, match="holds a subgraph"):
        costs_from_onnx(data, "flow", MB)


@pytest.mark.parametrize("name", ["", "a", "../etc/passwd", "x" * 41, "名前"])
def test_bad_model_names_are_refused(name):
    with pytest.raises(OnnxCostError, match="model name must be"):
        costs_from_onnx(classifier(), name, MB)
