"""Preprocessing stage model (engine.stages.preprocess): defaults, monotonicity, PREBA section 3.3's result."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.scenario import PreprocessingSpec
from engine.stages.dpu import TENSOR_BYTES, dpu_bytes_per_item, dpu_cu_times, dpu_sizing
from engine.stages.preprocess import (ADDON_MS, DecodePartition, cores_needed, cores_needed_curve, cpu_cost_per_item_s,
                                      decode_partitions, preprocess_stage)

IMAGE = {"name": "efficientnet-b0", "preprocess": "image", "request_bytes": 602112, "input_kind": "fixed"}
AUDIO = {"name": "citrinet", "preprocess": "audio", "request_bytes": 224000, "input_kind": "variable"}
TEXT = {"name": "bert-base", "preprocess": "none", "request_bytes": 4608, "input_kind": "variable"}


@pytest.fixture(scope="module")
def points(store) -> pd.DataFrame:
    return store.table("preprocessing_points")


def _measured(pipeline: str, step: str, sizes, ms) -> pd.DataFrame:
    return pd.DataFrame([{"source": "python -m engine profile preprocess (this project)", "pipeline": pipeline,
                          "step": step, "device": "cpu", "implementation": "Pillow (libjpeg-turbo)",
                          "input_desc": "test", "input_size": s, "ms_per_item": m, "kind": "measured",
                          "measured_on": "test host", "note": ""} for s, m in zip(sizes, ms)])


# --------------------------------------------------------------------------- CPU cost per item

def test_published_image_cost_is_decode_plus_addon(points):
    c = cpu_cost_per_item_s(points, "image", 0.37)
    assert "published decode-only" in c.basis and "add-on" in c.basis
    addon = (ADDON_MS[0] + ADDON_MS[1] * 0.37) / 1e3
    assert 1.5e-3 < c.seconds - addon < 4e-3  # libjpeg-turbo decode of a 0.37 MP JPEG on one x86 core
    assert {r["step"] for r in c.rows} == {"jpeg_decode"} and min(len(r["source"]) for r in c.rows) > 3
    assert cpu_cost_per_item_s(points, "image", 2.0).seconds > c.seconds


def test_measured_rows_win_unless_published_is_preferred(points):
    full = _measured("image", "decode+resize256+crop224+normalise", [0.2, 0.4, 0.8], [2.0, 4.0, 8.0])
    both = pd.concat([points, full], ignore_index=True)
    c = cpu_cost_per_item_s(both, "image", 0.3)
    assert c.basis.startswith("measured full-pipeline") and c.seconds == pytest.approx(3.0e-3)
    assert all(r["kind"] == "measured" for r in c.rows)
    assert cpu_cost_per_item_s(both, "image", 1.6).seconds == pytest.approx(16e-3)  # proportional beyond range
    assert cpu_cost_per_item_s(both, "image", 0.3, prefer="published").basis.startswith("published")


def test_audio_cost_is_linear_in_length(points):
    full = _measured("audio", "resample16k+stft+mel80+normalise", [2.5, 10, 25], [1.0 + 0.8 * s for s in (2.5, 10, 25)])
    c = cpu_cost_per_item_s(pd.concat([points, full], ignore_index=True), "audio", audio_s=7.0)
    assert c.seconds == pytest.approx((1.0 + 0.8 * 7.0) / 1e3) and "measured" in c.basis
    pub = cpu_cost_per_item_s(points, "audio", audio_s=7.0)
    assert pub.basis.startswith("published") and pub.seconds > 0
    assert cpu_cost_per_item_s(points, "audio", audio_s=14.0).seconds == pytest.approx(2 * pub.seconds)


# --------------------------------------------------------------------------- the stage

@pytest.mark.parametrize("device", ["cpu", "dpu", "gpu", "none"])
def test_text_models_and_none_cost_nothing(points, device):
    s = preprocess_stage(PreprocessingSpec(device=device), TEXT, points, 30, partitions=[("full", 1, 5, 1.0)])
    assert s.service_s == 0 and s.host_cpu_s == 0 and math.isinf(s.capacity_rps)
    ideal = preprocess_stage(PreprocessingSpec(device="none"), IMAGE, points, 30)
    assert math.isinf(ideal.capacity_rps) and ideal.latency_s == 0


def test_cpu_pool(points):
    s = preprocess_stage(PreprocessingSpec(device="cpu"), IMAGE, points, 30)
    assert s.servers == 30 and s.host_cpu_s == s.service_s and s.scv == pytest.approx(0.3)
    assert s.capacity_rps == pytest.approx(30 / s.service_s)
    o = preprocess_stage(PreprocessingSpec(device="cpu", cores=8, ms_per_item=2.0), IMAGE, points, 30)
    assert o.service_s == pytest.approx(2e-3) and o.capacity_rps == pytest.approx(4000)
    capped = preprocess_stage(PreprocessingSpec(device="cpu", cores=64), IMAGE, points, 30)
    assert capped.servers == 30 and any("only 30 free" in n for n in capped.notes)
    with pytest.raises(ValueError, match="no host cores"):
        preprocess_stage(PreprocessingSpec(device="cpu"), IMAGE, points, 0)


def test_dpu_image_and_audio(points):
    s = preprocess_stage(PreprocessingSpec(device="dpu", units=4), IMAGE, points, 30, pcie_gen=4)
    lat, ii = dpu_cu_times("image", 0.37)
    assert s.service_s == pytest.approx(ii) and s.capacity_rps == pytest.approx(4 / ii)
    assert s.latency_s == pytest.approx(lat + dpu_bytes_per_item("image", 0.37) / 31.5e9)
    assert 0 < s.host_cpu_s < 1e-4 and dpu_bytes_per_item("image", 0.37) > TENSOR_BYTES
    a = preprocess_stage(PreprocessingSpec(device="dpu", units=2), AUDIO, points, 30, audio_s=5.0)
    alat, aii = dpu_cu_times("audio", 5.0)
    assert alat > aii and a.capacity_rps == pytest.approx(2 / aii)  # sum of two CU types; slower one limits
    o = preprocess_stage(PreprocessingSpec(device="dpu", units=1, dpu_ii_ms=0.5, dpu_cu_latency_ms=2.0),
                         IMAGE, points, 30)
    assert o.service_s == pytest.approx(5e-4) and o.capacity_rps == pytest.approx(2000)


def test_pcie_caps_the_dpu(points):
    s = preprocess_stage(PreprocessingSpec(device="dpu", units=64, dpu_ii_ms=0.001), IMAGE, points, 30, pcie_gen=3)
    assert s.capacity_rps == pytest.approx(15.7e9 / dpu_bytes_per_item("image", 0.37))
    assert any("bottleneck: PCIe" in n for n in s.notes)


def test_gpu_decode_uses_jpeg_engines_only_where_the_profile_has_them(points, catalog):
    a100 = catalog.gpu("A100-SXM4-40GB")
    me, plain = decode_partitions(a100, ["1g.5gb+me"]), decode_partitions(a100, ["1g.5gb"])
    assert me[0].jpeg == 1 and plain[0].jpeg == 0 and plain[0].sm_share == pytest.approx(14 / 108)
    spec = PreprocessingSpec(device="gpu")
    hw = preprocess_stage(spec, IMAGE, points, 30, partitions=me)
    sw = preprocess_stage(spec, IMAGE, points, 30, partitions=plain)
    # issue 12: CUDA decode on a slice's own SMs is charged to its inference time, not to a stage of its own
    from engine.stages.preprocess import CostTable, sm_decode_s_per_item

    on_sms = sm_decode_s_per_item("image", spec.image_megapixels, CostTable(points), plain[0])
    assert sw.capacity_rps == float("inf") and sw.service_s == 0 and on_sms > 0
    assert hw.capacity_rps > 10 / on_sms and 0 < hw.host_cpu_s < sw.host_cpu_s
    full = preprocess_stage(spec, IMAGE, points, 30, partitions=decode_partitions(a100))
    assert 7000 < full.capacity_rps < 8500  # the A100's batched hardware decoder, ~7.8k img/s
    assert full.latency_s == pytest.approx(0.6006e-3 * 0.37 / 0.372476)
    with pytest.raises(ValueError, match="partitions"):
        preprocess_stage(spec, IMAGE, points, 30)


# --------------------------------------------------------------------------- properties

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.floats(0.05, 8.0))
def test_more_cores_never_lower_capacity(points, c1, c2, mp):
    lo, hi = sorted((c1, c2))
    caps = [preprocess_stage(PreprocessingSpec(device="cpu", image_megapixels=mp), IMAGE, points, c).capacity_rps
            for c in (lo, hi)]
    assert caps[0] <= caps[1] * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.integers(1, 64), st.sampled_from([3, 4, 5, 6]), st.floats(0.05, 8.0))
def test_more_cus_never_lower_capacity(points, u1, u2, gen, mp):
    lo, hi = sorted((u1, u2))
    caps = [preprocess_stage(PreprocessingSpec(device="dpu", units=u, image_megapixels=mp), IMAGE, points, 30,
                             pcie_gen=gen).capacity_rps for u in (lo, hi)]
    assert caps[0] <= caps[1] * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.floats(0.001, 2.0), st.sampled_from(["image", "audio"]))
def test_faster_link_never_lowers_dpu_capacity(points, units, ii_ms, kind):
    row = IMAGE if kind == "image" else AUDIO
    spec = PreprocessingSpec(device="dpu", units=units, dpu_ii_ms=ii_ms)
    caps = [preprocess_stage(spec, row, points, 30, audio_s=10.0, pcie_gen=g).capacity_rps for g in (3, 4, 5, 6)]
    assert all(a <= b * (1 + 1e-12) for a, b in zip(caps, caps[1:]))


@given(st.lists(st.floats(1, 5000), min_size=1, max_size=7), st.floats(1e-4, 0.05))
def test_cores_needed_curve_grows_with_active_partitions(tp, cost):
    curve = cores_needed_curve(tp, cost)
    assert [k for k, _ in curve] == list(range(1, len(tp) + 1))
    assert all(a[1] <= b[1] for a, b in zip(curve, curve[1:]))
    assert curve[-1][1] == pytest.approx(cores_needed(sum(tp), cost))


def test_dpu_sizing():
    _, ii = dpu_cu_times("image", 0.37)
    z = dpu_sizing(8400, ii, dpu_bytes_per_item("image", 0.37), pcie_gen=4)
    assert z.cus_needed * (1 / ii) >= 8400 > (z.cus_needed - 1) / ii
    assert 5 < z.pcie_gbps_used < 7.5 and z.pcie_ok  # PREBA 4.2: MobileNet peaks at 6.13 GB/s of 32
    assert not dpu_sizing(1e5, ii, 1e6, pcie_gen=3).pcie_ok


# --------------------------------------------------------------------------- PREBA section 3.3

def test_preba_cpu_is_the_bottleneck_of_seven_small_slices(store, points, catalog):
    """32-core host (30 free), A100 as 1g.5gb(7x), a light vision model: the CPU pool cannot keep up,
    a DPU with enough CUs or no preprocessing can (PREBA Fig 8, section 6.1)."""
    from engine.profiles import ProfileBook

    book = ProfileBook.from_store(store)
    # EfficientNet-B0 has A100-80GB points; its 1g.10gb has the same 14 SMs as the 40GB card's 1g.5gb
    per_slice = book.predict("efficientnet-b0", "A100-SXM4-80GB", "1g.10gb", 32).throughput
    gpu_total = 7 * per_slice
    cpu = preprocess_stage(PreprocessingSpec(device="cpu"), IMAGE, points, free_cores=32 - 2)
    assert cpu.capacity_rps < gpu_total
    curve = cores_needed_curve([per_slice] * 7, cpu.service_s)
    assert curve[-1][1] > 30 and curve[0][1] < 30  # Fig 8/9: one slice is fine, seven starve
    _, ii = dpu_cu_times("image", 0.37)
    units = dpu_sizing(gpu_total, ii, dpu_bytes_per_item("image", 0.37)).cus_needed
    dpu = preprocess_stage(PreprocessingSpec(device="dpu", units=units), IMAGE, points, 30)
    assert dpu.capacity_rps >= gpu_total and dpu.host_cpu_s * gpu_total < 1  # under one core of driver work
    assert preprocess_stage(PreprocessingSpec(device="none"), IMAGE, points, 30).capacity_rps > gpu_total
    slices = decode_partitions(catalog.gpu("A100-SXM4-40GB"), ["1g.5gb"] * 7)
    from engine.stages.preprocess import CostTable, sm_decode_s_per_item

    # no JPEG engine on 1g.5gb: CUDA decode on the slices' SMs (charged to their inference time, issue 12)
    assert 7 / sm_decode_s_per_item("image", 0.37, CostTable(points), slices[0]) < gpu_total
    assert isinstance(slices[0], DecodePartition)


def test_cost_table_remembers_and_answers_as_the_table_does(store):
    from engine.stages.preprocess import CostTable, cpu_cost_per_item_s, cpu_decode_s

    points = store.table("preprocessing_points")
    table = CostTable(points)
    assert table.cpu_cost("image", 0.37).seconds == cpu_cost_per_item_s(points, "image", 0.37).seconds
    assert table.cpu_decode(0.5) == cpu_decode_s(points, 0.5)
    assert table.cpu_cost("image", 0.37) is table.cpu_cost("image", 0.37)  # computed once
