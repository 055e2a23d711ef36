"""The per-operator roofline (engine.estimator.roofline) and partition specs: monotone where physics says so."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from engine.estimator.hardware import HardwareError, partition_spec
from engine.estimator.roofline import Efficiency, Harness, OpTable, batch_latency_s, smooth_max
from engine.vocab import OpClass

EFF = Efficiency(compute={c: 0.5 for c in OpClass}, memory=0.7, matrix_floor_s=5e-6, vector_floor_s=2e-6)
#: an eager framework's share of the fusable operators, so the hypothesis cases cover that path too
HARNESS = Harness(overhead_s=1e-3, per_item_s=1e-5, unfused=0.6)


@pytest.fixture(scope="module")
def store_parts(store):
    specs = {r["sku"]: r for r in store.table("gpu_specs").to_dict("records")}
    return store.catalog(), specs


def _ops(flops, weights, acts, classes, ref_len=None, power=0, fusable=True):
    """A table of these operators, each followed by a fusable activation over its output (unless `fusable` is
    False)."""
    n = len(flops)
    act = _ops([0.0] * n, [0.0] * n, acts, [OpClass.MEMORY] * n, ref_len, power, False) if fusable else None
    return OpTable(model="m", ref_len=ref_len, op_class=tuple(classes), flops=np.array(flops, float),
                   weight_elems=np.array(weights, float), in_elems=np.array(acts, float),
                   out_elems=np.array(acts, float), flops_len_power=np.full(n, power),
                   in_len_power=np.full(n, power), out_len_power=np.full(n, power), fusable=act)


op_lists = st.lists(st.tuples(st.floats(0, 1e11), st.floats(0, 1e8), st.floats(0, 1e7),
                              st.sampled_from(list(OpClass))), min_size=1, max_size=8)


def _spec(store_parts, sku="A100-SXM4-80GB", partition="full", precision="fp16"):
    catalog, specs = store_parts
    return partition_spec(catalog.gpu(sku), specs[sku], partition, precision)


@settings(max_examples=60, deadline=None)
@given(ops=op_lists, op=st.integers(0, 7), factor=st.floats(1.0, 100.0), what=st.sampled_from(["flops", "bytes"]))
def test_more_flops_or_bytes_never_makes_an_estimate_faster(store_parts, ops, op, factor, what):
    spec = _spec(store_parts)
    f, w, a, c = (list(x) for x in zip(*ops))
    i = op % len(f)
    base = batch_latency_s(_ops(f, w, a, c), spec, EFF, HARNESS, 4)
    if what == "flops":
        f[i] *= factor
    else:
        w[i] *= factor
        a[i] *= factor
    assert batch_latency_s(_ops(f, w, a, c), spec, EFF, HARNESS, 4) >= base * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(ops=op_lists, batch=st.integers(1, 512))
def test_estimates_are_monotone_in_batch(store_parts, ops, batch):
    spec = _spec(store_parts)
    table = _ops(*(list(x) for x in zip(*ops)))
    assert batch_latency_s(table, spec, EFF, HARNESS, batch + 1) >= batch_latency_s(table, spec, EFF, HARNESS, batch)


@settings(max_examples=40, deadline=None)
@given(ops=op_lists, batch=st.integers(1, 256),
       sku=st.sampled_from(["A100-SXM4-80GB", "A100-SXM4-40GB", "H100-SXM5-80GB", "A30-24GB", "H200-141GB"]))
def test_a_larger_slice_of_the_same_gpu_is_never_slower(store_parts, ops, batch, sku):
    catalog, _ = store_parts
    gpu = catalog.gpu(sku)
    names = sorted((p for p in gpu.profiles if "+me" not in p.name),
                   key=lambda p: (p.sm_count, p.memory_slices))
    table = _ops(*(list(x) for x in zip(*ops)))
    times = [batch_latency_s(table, _spec(store_parts, sku, p.name), EFF, HARNESS, batch) for p in names]
    for (small, t_small), (big, t_big) in zip(zip(names, times), zip(names[1:], times[1:])):
        if big.sm_count >= small.sm_count and big.memory_slices >= small.memory_slices:
            assert t_big <= t_small * (1 + 1e-12), (small.name, big.name)
    full = batch_latency_s(table, _spec(store_parts, sku, "full"), EFF, HARNESS, batch)
    assert full <= min(times) * (1 + 1e-12)  # MIG off: every SM and all the bandwidth


def test_variable_length_attention_scales_quadratically(store_parts):
    spec = _spec(store_parts)
    eff = Efficiency(compute={c: 0.5 for c in OpClass}, memory=0.7, matrix_floor_s=0.0, vector_floor_s=0.0)
    none = Harness(overhead_s=0.0, per_item_s=0.0)
    table = _ops([1e12], [0.0], [0.0], [OpClass.ATTENTION], ref_len=128, power=2, fusable=False)
    t128 = batch_latency_s(table, spec, eff, none, 1, input_len=128)
    t256 = batch_latency_s(table, spec, eff, none, 1, input_len=256)
    assert t256 == pytest.approx(4 * t128, rel=1e-9)
    assert t128 == pytest.approx(1e12 / (312e12 * 0.5), rel=1e-9)  # compute-bound: FLOPs / (A100 fp16 peak x 0.5)


def test_an_eager_harness_pays_the_fusable_operators_and_a_fusing_one_does_not(store_parts):
    spec = _spec(store_parts, "T4-16GB")
    table = _ops([1e9], [1e6], [1e6], [OpClass.CONV])
    fused, eager = (batch_latency_s(table, spec, EFF, Harness(overhead_s=0, per_item_s=0, unfused=u), 8)
                    for u in (0.0, 1.0))
    alone = batch_latency_s(table.model_copy(update={"fusable": None}), spec, EFF,
                            Harness(overhead_s=0, per_item_s=0), 8)
    assert fused == alone and eager > fused


def test_smooth_max_is_within_the_norm_of_the_true_max():
    a, b = np.array([1.0, 3.0]), np.array([1.0, 0.0])
    m = smooth_max(a, b)
    assert np.all(m >= np.maximum(a, b)) and np.all(m <= np.maximum(a, b) * 2 ** 0.25 + 1e-12)


def test_a_mig_slice_gets_its_sm_and_memory_share(store_parts):
    s = _spec(store_parts, "A100-SXM4-80GB", "1g.10gb")
    assert s.sm_count == 14 and s.memory_share == pytest.approx(1 / 8)
    assert s.matrix_flops == pytest.approx(312e12 * 14 / 108)
    assert s.memory_bw == pytest.approx(2039e9 / 8)


def test_unknown_partition_and_precision_are_named(store_parts):
    with pytest.raises(HardwareError, match="not a partition of A100-SXM4-80GB; valid: full"):
        _spec(store_parts, partition="9g.99gb")
    with pytest.raises(HardwareError, match="'fp8' is not a precision"):
        _spec(store_parts, precision="fp8")
