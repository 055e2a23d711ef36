"""ONNX upload -> cost table (engine.estimator.onnx_costs): exact counts on small graphs built here, hostile files
refused with a KneepointError that names the problem, never a path opened nor a huge product taken."""

import builtins
import os

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from onnx import TensorProto, helper, numpy_helper

from engine.errors import KneepointError
from engine.estimator.onnx_costs import OnnxCostError, costs_from_onnx
from engine.seed.cost_records import MAX_OPS_PER_MODEL
from engine.vocab import OpClass

MB = 10 * 1024 * 1024
F = TensorProto.FLOAT


def _init(name, shape):
    return numpy_helper.from_array(np.zeros(shape, dtype=np.float32), name)


def _declared(name, shape):
    """An initializer that declares its dims but holds no data (a hostile file's cheap giant)."""
    t = TensorProto(name=name, data_type=F)
    t.dims.extend(shape)
    return t


def _vi(name, shape):
    return helper.make_tensor_value_info(name, F, shape)


def _proto(nodes, inputs, outputs, inits=(), opset=17, **graph):
    g = helper.make_graph(nodes, "g", inputs, outputs, list(inits), **graph)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def _model(nodes, inputs, outputs, inits=(), opset=17, **graph) -> bytes:
    return _proto(nodes, inputs, outputs, inits, opset, **graph).SerializeToString()


def _by_name(data, model="m-test"):
    return {r.name: r for r in costs_from_onnx(data, model, MB)}


def classifier(cout=8, k=3, batch="N") -> bytes:
    """Conv(3->cout, k x k, pad k//2) -> BN -> Relu -> GlobalAveragePool -> Flatten -> Gemm(cout->10) on 3x16x16."""
    nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[k // 2] * 4, name="conv"),
             helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Relu", ["n"], ["r"], name="relu"),
             helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
             helper.make_node("Flatten", ["p"], ["f"], name="flat"),
             helper.make_node("Gemm", ["f", "FC", "FB"], ["y"], transB=1, name="fc")]
    inits = [_init("W", (cout, 3, k, k)), _init("B", (cout,)), _init("s", (cout,)), _init("b", (cout,)),
             _init("m", (cout,)), _init("v", (cout,)), _init("FC", (10, cout)), _init("FB", (10,))]
    return _model(nodes, [_vi("x", [batch, 3, 16, 16])], [_vi("y", [batch, 10])], inits)


def attention(seq=32, d=16) -> bytes:
    """One head: q = x Wq, k = x Wk; scores = q k^T; softmax; out = scores x (V = x), at a fixed length."""
    nodes = [helper.make_node("MatMul", ["x", "Wq"], ["q"], name="q"),
             helper.make_node("MatMul", ["x", "Wk"], ["k"], name="k"),
             helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="kt"),
             helper.make_node("MatMul", ["q", "kt"], ["s"], name="scores"),
             helper.make_node("Softmax", ["s"], ["a"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["a", "x"], ["y"], name="av")]
    return _model(nodes, [_vi("x", ["batch", seq, d])], [_vi("y", ["batch", seq, d])],
                  [_init("Wq", (d, d)), _init("Wk", (d, d))])


# exact counts, by hand


def test_a_small_classifier_is_counted_exactly():
    rows = costs_from_onnx(classifier(), "tiny-cnn", MB)
    assert [r.op for r in rows] == list(range(6)) and {r.source for r in rows} == {"uploaded ONNX (tiny-cnn)"}
    by = {r.name: r for r in rows}
    conv, bn, relu, pool, flat, fc = (by[n] for n in ("conv", "bn", "relu", "pool", "flat", "fc"))
    assert conv.op_class == OpClass.CONV and conv.flops == 2 * 8 * 16 * 16 * 3 * 9 == 110_592
    assert (conv.weight_elems, conv.in_elems, conv.out_elems) == (8 * 3 * 9 + 8, 3 * 16 * 16, 8 * 16 * 16)
    assert bn.op_class == OpClass.MEMORY and (bn.flops, bn.weight_elems, bn.in_elems) == (2048, 32, 2048)
    assert bn.fusable and relu.fusable and relu.flops == 2048
    assert not pool.fusable and pool.flops == pool.out_elems == 8 and pool.in_elems == 2048
    assert not flat.fusable and flat.flops == 8
    assert fc.op_class == OpClass.MATMUL and (fc.flops, fc.weight_elems) == (2 * 8 * 10, 10 * 8 + 10)
    assert (fc.in_elems, fc.out_elems) == (8, 10) and not fc.fusable
    assert all(r.ref_len is None and r.flops_len_power == 0 for r in rows)


def test_costs_are_per_sample_whatever_batch_the_file_fixes():
    assert costs_from_onnx(classifier(batch=64), "b64", MB)[0].flops == costs_from_onnx(classifier(), "bn", MB)[0].flops


def test_attention_matmuls_without_weights_are_attention():
    by = _by_name(attention())
    assert [by[n].op_class for n in ("q", "k", "scores", "av")] == [OpClass.MATMUL, OpClass.MATMUL,
                                                                     OpClass.ATTENTION, OpClass.ATTENTION]
    assert by["q"].flops == 2 * 32 * 16 * 16 and by["q"].weight_elems == 16 * 16 and by["q"].in_elems == 32 * 16
    assert by["scores"].flops == 2 * 32 * 32 * 16 and by["scores"].weight_elems == 0
    assert by["scores"].in_elems == 2 * 32 * 16 and by["scores"].out_elems == 32 * 32
    assert by["av"].flops == 2 * 32 * 16 * 32 and by["av"].in_elems == 32 * 32 + 32 * 16
    assert by["softmax"].op_class == OpClass.MEMORY and by["softmax"].flops == 32 * 32
    assert by["kt"].flops == 32 * 16 and not any(r.fusable for r in by.values())


def test_batched_matmuls_count_the_broadcast_batch():
    nodes = [helper.make_node("MatMul", ["a", "b"], ["s"], name="heads"),  # (2, 32, 8) x (1, 8, 32)
             helper.make_node("MatMul", ["x", "W"], ["y"], name="proj")]  # (5, 6) x (6, 7), W a Constant node
    nodes.insert(0, helper.make_node("Constant", [], ["W"], value=numpy_helper.from_array(np.ones((6, 7), np.float32))))
    by = _by_name(_model(nodes, [_vi("a", ["N", 2, 32, 8]), _vi("b", ["N", 1, 8, 32]), _vi("x", ["N", 5, 6])],
                         [_vi("s", None), _vi("y", None)]))
    assert set(by) == {"heads", "proj"}  # a Constant is no kernel: its value is the weights of its reader
    assert by["heads"].op_class == OpClass.ATTENTION and by["heads"].flops == 2 * 2 * 32 * 32 * 8
    assert by["proj"].op_class == OpClass.MATMUL and by["proj"].flops == 2 * 5 * 7 * 6 and by["proj"].weight_elems == 42


def test_depthwise_grouped_and_transposed_convs():
    nodes = [helper.make_node("Conv", ["x", "DW"], ["d"], group=4, pads=[1] * 4, name="dw"),
             helper.make_node("Conv", ["d", "GW"], ["g"], group=2, pads=[1] * 4, name="grouped"),
             helper.make_node("ConvTranspose", ["g", "TW"], ["y"], strides=[2, 2], name="up")]
    inits = [_init("DW", (4, 1, 3, 3)), _init("GW", (6, 2, 3, 3)), _init("TW", (6, 3, 2, 2))]
    by = _by_name(_model(nodes, [_vi("x", ["N", 4, 8, 8])], [_vi("y", None)], inits))
    assert by["dw"].op_class == OpClass.DEPTHWISE and by["dw"].flops == 2 * 4 * 8 * 8 * 1 * 9 == 4608
    assert by["grouped"].op_class == OpClass.CONV and by["grouped"].flops == 2 * 6 * 8 * 8 * 2 * 9
    assert by["up"].op_class == OpClass.CONV and by["up"].out_elems == 3 * 16 * 16
    assert by["up"].flops == 2 * (6 * 8 * 8) * 3 * 4  # each input element scattered into Cout x k x k outputs


def test_an_lstm_is_a_matmul():
    nodes = [helper.make_node("LSTM", ["x", "W", "R"], ["y"], hidden_size=6, layout=1, name="lstm")]
    by = _by_name(_model(nodes, [_vi("x", ["N", 7, 5])], [_vi("y", None)],
                         [_init("W", (1, 24, 5)), _init("R", (1, 24, 6))]))
    assert by["lstm"].op_class == OpClass.MATMUL and by["lstm"].flops == 2 * 4 * 7 * 6 * (5 + 6)
    assert by["lstm"].weight_elems == 24 * 11 and by["lstm"].out_elems == 7 * 6


def test_epilogues_fuse_only_straight_after_a_conv_or_matmul():
    nodes = [helper.make_node("Conv", ["x", "W1"], ["c"], name="conv1"),
             helper.make_node("Add", ["c", "bias"], ["cb"], name="bias"),  # constant operand: fused
             helper.make_node("Relu", ["cb"], ["r"], name="relu1"),
             helper.make_node("Conv", ["r", "W2"], ["d"], name="conv2"),
             helper.make_node("Add", ["x", "d"], ["res"], name="residual"),  # skip first, conv second: fused
             helper.make_node("HardSwish", ["res"], ["h"], name="hswish"),
             helper.make_node("Mul", ["h", "h"], ["sq"], name="square"),  # two activations, not residual
             helper.make_node("Sigmoid", ["sq"], ["sg"], name="sigmoid"),  # after an unfused node
             helper.make_node("Softmax", ["sg"], ["sm"], name="softmax"),
             helper.make_node("Mul", ["sm", "scale"], ["y"], name="scale")]  # constant operand, not after a conv
    inits = [_init("W1", (4, 4, 1, 1)), _init("W2", (4, 4, 1, 1)), _init("bias", (1, 4, 1, 1)), _init("scale", (1,))]
    by = _by_name(_model(nodes, [_vi("x", ["N", 4, 8, 8])], [_vi("y", None)], inits))
    fused = {n for n, r in by.items() if r.fusable}
    assert fused == {"bias", "relu1", "residual", "hswish"}
    assert by["bias"].weight_elems == 4 and by["residual"].in_elems == 2 * 4 * 64


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups=st.integers(1, 3), cin_g=st.integers(1, 3), cout_g=st.integers(1, 3), k=st.sampled_from([1, 3, 5]),
       size=st.integers(5, 12), stride=st.integers(1, 2), pad=st.integers(0, 2))
def test_conv_flops_follow_the_formula_and_grow_with_channels(groups, cin_g, cout_g, k, size, stride, pad):
    def flops(cout):
        nodes = [helper.make_node("Conv", ["x", "W"], ["y"], strides=[stride] * 2, pads=[pad] * 4, group=groups)]
        data = _model(nodes, [_vi("x", ["N", groups * cin_g, size, size])], [_vi("y", None)],
                      [_init("W", (cout, cin_g, k, k))])
        (row,) = costs_from_onnx(data, "cv", MB)
        return row.flops
    out = (size + 2 * pad - k) // stride + 1
    assert flops(groups * cout_g) == 2 * groups * cout_g * out * out * cin_g * k * k
    assert flops(groups * (cout_g + 1)) >= flops(groups * cout_g)


# hostile files


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_give_only_a_kneepoint_error(data):
    try:
        costs_from_onnx(data, "rnd", MB)
    except OnnxCostError as e:
        assert len(str(e)) < 300
    else:
        raise AssertionError("random bytes made a cost table")


@pytest.mark.parametrize("data, match", [
    (os.urandom(0) + bytes(range(256)) * 4, "not an ONNX model"),
    (classifier()[:40], "not an ONNX model"),
    (classifier()[:-7], "not an ONNX model"),
    (b"", "empty"),
])
def test_broken_files_are_named_not_raised(data, match):
    with pytest.raises(OnnxCostError, match=match):
        costs_from_onnx(data, "bad", MB)
    assert issubclass(OnnxCostError, KneepointError)


def test_a_file_over_the_limit_is_refused_before_parsing(monkeypatch):
    monkeypatch.setattr(onnx.ModelProto, "ParseFromString", lambda *a: pytest.fail("parsed an oversized file"))
    with pytest.raises(OnnxCostError, match="over the 0.0 MB limit"):
        costs_from_onnx(classifier(), "big", 100)


def _external(tensor, location="/etc/passwd"):
    tensor.ClearField("raw_data")
    tensor.data_location = TensorProto.EXTERNAL
    tensor.external_data.add(key="location", value=location)


def _with_external_constant():
    m = onnx.load_from_string(classifier())
    const = helper.make_node("Constant", [], ["FB2"], value=numpy_helper.from_array(np.zeros(10, np.float32)))
    _external(const.attribute[0].t)
    m.graph.node.insert(0, const)
    return m


@pytest.mark.parametrize("make", [
    lambda: (lambda m: (_external(m.graph.initializer[0]), m)[1])(onnx.load_from_string(classifier())),
    _with_external_constant,
], ids=["initializer", "constant"])
def test_external_data_is_refused_and_never_opened(monkeypatch, make):
    opened = []
    real_open, real_os_open = builtins.open, os.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **k: opened.append(str(f)) or real_open(f, *a, **k))
    monkeypatch.setattr(os, "open", lambda f, *a, **k: opened.append(str(f)) or real_os_open(f, *a, **k))
    with pytest.raises(OnnxCostError, match="external-data models are not accepted.*weights embedded"):
        costs_from_onnx(make().SerializeToString(), "ext", MB)
    assert not [f for f in opened if "passwd" in f]


def test_a_symbolic_sequence_length_names_the_input_and_dim():
    data = _model([helper.make_node("MatMul", ["tokens", "W"], ["y"])], [_vi("tokens", ["N", "seq", 4])],
                  [_vi("y", None)], [_init("W", (4, 4))])
    with pytest.raises(OnnxCostError, match="input tokens has a symbolic dimension 1 .seq. besides the batch; set a "
                                            "fixed sequence length when exporting"):
        costs_from_onnx(data, "seq", MB)


def test_a_shape_computed_at_run_time_is_named():
    nodes = [helper.make_node("Shape", ["x"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"], name="view")]
    with pytest.raises(OnnxCostError, match="dimension 0 of tensor y of node view unknown; export with fixed"):
        costs_from_onnx(_model(nodes, [_vi("x", ["N", 4])], [_vi("y", None)]), "dyn", MB)


@pytest.mark.parametrize("shape", [[1, 10 ** 12, 10], [1] + [2 ** 62] * 15])
def test_a_huge_dimension_is_refused_without_allocating(shape):
    data = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape)], [_vi("y", None)])
    with pytest.raises(OnnxCostError, match="tensor x of node Relu_0 has more than 1e\\+12 elements"):
        costs_from_onnx(data, "huge", MB)


def test_declared_giants_are_bounded_in_sums_and_flops():
    gemm = [helper.make_node("Gemm", ["x", "B", "C"], ["y"], name="fc")]
    data = _model(gemm, [_vi("x", ["N", 10 ** 6])], [_vi("y", None)],
                  [_declared("B", [10 ** 6, 10 ** 6]), _declared("C", [10 ** 6])])
    with pytest.raises(OnnxCostError, match="the weights of node fc adds up to"):
        costs_from_onnx(data, "giant", MB)
    mm = [helper.make_node("MatMul", ["x", "W"], ["y"], name="mm")]
    data = _model(mm, [_vi("x", ["N", 10 ** 5, 10 ** 5])], [_vi("y", None)], [_declared("W", [10 ** 5, 10 ** 5])])
    with pytest.raises(OnnxCostError, match="node mm needs 2e\\+15 FLOPs per sample, over the 1e\\+15 limit"):
        costs_from_onnx(data, "giant", MB)


def test_too_many_nodes_are_refused():
    m = _proto([], [_vi("t", [1, 4])], [_vi("t", [1, 4])])
    m.graph.node.extend([helper.make_node("Relu", ["t"], ["t"])] * (MAX_OPS_PER_MODEL + 1))  # copies one proto
    with pytest.raises(OnnxCostError, match=f"{MAX_OPS_PER_MODEL + 1:,} nodes; at most {MAX_OPS_PER_MODEL:,}"):
        costs_from_onnx(m.SerializeToString(), "deep", 100 * MB)


def test_control_flow_is_refused():
    then = helper.make_graph([helper.make_node("Identity", ["x"], ["o"])], "t", [], [_vi("o", [1])])
    nodes = [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=then, name="branch")]
    data = _model(nodes, [helper.make_tensor_value_info("c", TensorProto.BOOL, []), _vi("x", [1])], [_vi("y", [1])])
    with pytest.raises(OnnxCostError, match="node branch .If. holds a subgraph"):
        costs_from_onnx(data, "flow", MB)


def test_unknown_operators_opsets_and_functions_are_refused():
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    with pytest.raises(OnnxCostError, match="opset 99, newer than the \\d+ this app reads"):
        costs_from_onnx(_model(relu, [_vi("x", [1, 4])], [_vi("y", None)], opset=99), "new", MB)
    zork = [helper.make_node("Zork" * 1000, ["x"], ["y"])]
    with pytest.raises(OnnxCostError, match="operator ZorkZork.{32}\\.\\.\\. is not a standard ONNX operator"):
        costs_from_onnx(_model(zork, [_vi("x", [1, 4])], [_vi("y", None)]), "zork", MB)
    custom = _proto([helper.make_node("FusedConv", ["x"], ["y"], domain="com.microsoft")], [_vi("x", [1, 4])],
                    [_vi("y", None)])
    with pytest.raises(OnnxCostError, match="domain com.microsoft; only standard ONNX operators"):
        costs_from_onnx(custom.SerializeToString(), "custom", MB)
    fn = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("F", ["a"], ["b"], domain="local")],
                              [helper.make_opsetid("local", 1)])
    recursive = _proto(relu, [_vi("x", [1, 4])], [_vi("y", None)])
    recursive.functions.append(fn)
    with pytest.raises(OnnxCostError, match="defines its own functions"):
        costs_from_onnx(recursive.SerializeToString(), "fn", MB)


def test_rank_bombs_are_refused_before_their_node_is_inferred(monkeypatch):
    real = onnx.shape_inference.infer_node_outputs
    seen = []
    monkeypatch.setattr(onnx.shape_inference, "infer_node_outputs",
                        lambda schema, node, *a, **k: seen.append(node.op_type) or real(schema, node, *a, **k))
    shape = numpy_helper.from_array(np.ones(100_000, np.int64), "shape")
    data = _model([helper.make_node("Reshape", ["x", "shape"], ["y"], name="bomb")], [_vi("x", [1, 1])],
                  [_vi("y", None)], [shape])
    with pytest.raises(OnnxCostError, match="node bomb .Reshape. asks for 100,000 dimensions; at most 16"):
        costs_from_onnx(data, "bomb", MB)
    assert "Reshape" not in seen
    relu = [helper.make_node("Relu", ["x"], ["y"])]
    with pytest.raises(OnnxCostError, match="input x has 100,000 dimensions"):
        costs_from_onnx(_model(relu, [_vi("x", [1] * 100_000)], [_vi("y", None)]), "bomb", MB)
    noise = [helper.make_node("RandomNormal", [], ["y"], shape=[1] * 100_000, name="noise")]
    with pytest.raises(OnnxCostError, match="attribute shape of node noise has 100,000 dimensions"):
        costs_from_onnx(_model(noise, [], [_vi("y", None)]), "bomb", MB)


def test_a_rank_doubling_chain_stops_at_the_limit():
    """Gather(t, t) has rank 2r - 1: whole-graph shape inference of 26 of them (700 bytes) aborts the process."""
    nodes = [helper.make_node("Gather", [f"t{i}", f"t{i}"], [f"t{i + 1}"], name=f"g{i}") for i in range(40)]
    data = _model(nodes, [helper.make_tensor_value_info("t0", TensorProto.INT64, ["N", 2])],
                  [helper.make_tensor_value_info("t40", TensorProto.INT64, None)])
    with pytest.raises(OnnxCostError, match="node g3 .Gather. makes a tensor of 17 dimensions; at most 16"):
        costs_from_onnx(data, "gather", MB)


def test_shape_arithmetic_is_never_evaluated():
    """A Concat of a constant with itself doubles it per node; evaluating 40 of them would need 8 TB."""
    nodes = [helper.make_node("Concat", [f"c{i}", f"c{i}"], [f"c{i + 1}"], axis=0) for i in range(40)]
    nodes.append(helper.make_node("Reshape", ["x", "c40"], ["y"], name="view"))
    data = _model(nodes, [_vi("x", [1, 4])], [_vi("y", None)], [numpy_helper.from_array(np.ones(1000, np.int64), "c0")])
    with pytest.raises(OnnxCostError, match="node view .Reshape. asks for 1,099,511,627,776,000 dimensions"):
        costs_from_onnx(data, "concat", MB)


def test_names_from_the_file_are_cut_in_rows_and_errors():
    long = "n" * 5000 + "<script>"
    rows = costs_from_onnx(_model([helper.make_node("Relu", ["x"], ["y"], name=long)], [_vi("x", [1, 4])],
                                  [_vi("y", None)]), "cut", MB)
    assert len(rows[0].name) <= 83 and "<" not in rows[0].name
    with pytest.raises(OnnxCostError) as e:
        costs_from_onnx(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x" + long, [1, "L"])],
                               [_vi("y", None)]), "cut", MB)
    assert len(str(e.value)) < 200 and "<script>" not in str(e.value)


@pytest.mark.parametrize("name", ["", "a", "../etc/passwd", "x" * 41, "名前", "a b", None, "-lead"])
def test_bad_model_names_are_refused(name):
    with pytest.raises(OnnxCostError, match="model name must be"):
        costs_from_onnx(classifier(), name, MB)


def test_an_old_export_fuses_a_residual_sum_and_skips_an_unread_mask():
    """Opset 9 (Caffe2-era exports): residual Sum; Dropout's mask, which nothing reads, has no inferred shape."""
    nodes = [helper.make_node("Conv", ["x", "W"], ["c"], name="conv"),
             helper.make_node("Sum", ["x", "c"], ["s"], name="sum"),
             helper.make_node("Dropout", ["s"], ["y", "mask"], ratio=0.5, name="drop")]
    by = _by_name(_model(nodes, [_vi("x", [1, 4, 8, 8])], [_vi("y", None)], [_init("W", (4, 4, 1, 1))], opset=9))
    assert by["sum"].fusable and not by["drop"].fusable
    assert by["drop"].out_elems == by["drop"].flops == 4 * 64
