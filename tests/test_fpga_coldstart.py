"""Cold start: streaming (slice-by-slice) loading on the FPGA against whole-model loading on GPU and CPU."""

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from engine.fpga import coldstart as cs
from engine.fpga.model import EIF_THREADS_PER_ACCELERATOR, EIF_ACCELERATORS_PER_BOARD
from tests.test_fpga_model import FIGURES, figure

WEIGHTS = st.floats(1e3, 2e9)  # bytes
BW = st.floats(0.5, 64)  # GB/s
COMPUTE = st.floats(1e-5, 10.0)  # s
FIXED = st.floats(0, 1.0)  # s


def test_published_shares_and_buffer_estimate_are_the_rows():
    assert cs.EIF_COLD_START_SHARE * 100 == figure("EIF seed, Sec V-D", "EIF cold start", "share of response time")
    assert cs.GPU_COLD_START_SHARE * 100 == figure("EIF seed, Sec I", "GPU INaaS cold start", "share of response time")
    assert cs.CPU_COLD_START_SHARE * 100 == figure("EIF seed, Sec I", "CPU INaaS cold start", "share of response time")
    bram = figure("EIF seed, Table II", "Block RAM used by the 48-thread EIF", "block RAM")
    assert cs.EIF_BRAM_USED_BITS == bram
    assert cs.EIF_THREADS_BUILT == EIF_ACCELERATORS_PER_BOARD * EIF_THREADS_PER_ACCELERATOR
    assert cs.EIF_SLICE_BYTES == bram / cs.EIF_THREADS_BUILT / cs.EIF_BUFFERS_PER_THREAD / 8


def test_pcie_bandwidth_scales_the_x16_row_by_lanes():
    gen3 = FIGURES[(FIGURES.category == "pcie_spec") & (FIGURES["item"] == "PCIe Gen3 x16 per direction")]
    assert cs.pcie_gbytes_s(3, 16) == float(gen3.value.iloc[0])
    assert cs.pcie_gbytes_s(3, 8) == pytest.approx(cs.pcie_gbytes_s(3, 16) / 2)
    with pytest.raises(ValueError, match="pcie_gen"):
        cs.pcie_gbytes_s(2, 8)
    with pytest.raises(ValueError, match="lanes"):
        cs.pcie_gbytes_s(3, 32)


@given(WEIGHTS, st.floats(64, 1e6), BW, COMPUTE, FIXED, st.floats(0, 1))
def test_streaming_takes_a_smaller_share_than_whole_model_loading(weights, slice_bytes, bw, compute, init, setup_frac):
    assume(slice_bytes < weights)
    s = cs.streaming(weights, slice_bytes, bw, compute, setup_s=init * setup_frac)
    w = cs.whole_model(weights, bw, compute, init_s=init)
    assert s.share < w.share
    assert s.cold_start_s <= w.cold_start_s and s.response_s <= w.response_s  # overlap never costs time
    assert 0 <= s.share < 1 and 0 <= w.share < 1


@given(WEIGHTS, BW, COMPUTE, FIXED)
def test_one_slice_holding_the_whole_model_is_whole_model_loading(weights, bw, compute, fixed):
    s = cs.streaming(weights, weights * 2, bw, compute, setup_s=fixed)
    w = cs.whole_model(weights, bw, compute, init_s=fixed)
    assert s.cold_start_s == pytest.approx(w.cold_start_s) and s.response_s == pytest.approx(w.response_s)


@given(WEIGHTS, st.floats(64, 1e6), BW, COMPUTE)
def test_streaming_response_is_bound_by_compute_or_transfer(weights, slice_bytes, bw, compute):
    s = cs.streaming(weights, slice_bytes, bw, compute)
    transfer = weights / (bw * 1e9)
    assert s.response_s == pytest.approx(max(transfer, min(slice_bytes, weights) / (bw * 1e9) + compute))


@given(st.sampled_from([cs.GPU_COLD_START_SHARE, cs.CPU_COLD_START_SHARE, cs.EIF_COLD_START_SHARE]),
       WEIGHTS, BW, COMPUTE)
def test_fixed_time_for_a_share_reproduces_the_share(share, weights, bw, compute):
    load = weights / (bw * 1e9)
    init = cs.fixed_for_share(share, load, compute)
    assume(init >= 0)
    assert cs.whole_model(weights, bw, compute, init_s=init).share == pytest.approx(share, rel=1e-9)


def test_published_ordering_gpu_above_cpu_above_streaming():
    """With the same library time and compute, the GPU's extra PCIe copy puts its share above the CPU's (the
    published 91 % > 73 %), and streaming stays below both (about 5 %)."""
    df = cs.cold_start_table(weights_mb=75.5, fpga_ms=20.0, gpu_ms=20.0, cpu_ms=20.0, library_init_ms=50.0)
    by = df.set_index("platform")
    assert by.loc["gpu", "cold_start_share"] > by.loc["cpu", "cold_start_share"] > by.loc["fpga", "cold_start_share"]
    assert by.loc["gpu", "published_share"] > by.loc["cpu", "published_share"] > by.loc["fpga", "published_share"]
    assert list(by.loading) == ["streaming", "whole-model", "whole-model"]


@given(st.floats(0.02, 500), st.floats(0.01, 1e3), st.floats(0.01, 1e3), st.floats(0.01, 1e3), st.floats(0, 1e3))
def test_cold_start_table_rows_are_consistent(weights_mb, fpga_ms, gpu_ms, cpu_ms, init_ms):
    df = cs.cold_start_table(weights_mb, fpga_ms, gpu_ms, cpu_ms, library_init_ms=init_ms)
    assert df.cold_start_share.tolist() == pytest.approx((df.cold_start_ms / df.response_ms).tolist())
    assert df.compute_ms.tolist() == pytest.approx([fpga_ms, gpu_ms, cpu_ms])
    # the fixed time that reproduces each published share, put back into the model, gives that share
    for row in df.itertuples():
        load_ms = row.cold_start_ms - (0.0 if row.platform == "fpga" else init_ms)
        if row.fixed_to_match_ms >= 0:
            after = row.response_ms - row.cold_start_ms
            share = (row.fixed_to_match_ms + load_ms) / (row.fixed_to_match_ms + load_ms + after)
            assert share == pytest.approx(row.published_share, rel=1e-6)


@pytest.mark.parametrize("call, match", [
    (lambda: cs.streaming(-1, 10, 1, 1), "weights_bytes"),
    (lambda: cs.streaming(10, 10, 0, 1), "link_gbytes_s"),
    (lambda: cs.whole_model(10, 1, float("nan")), "compute_s"),
    (lambda: cs.whole_model(10, -2, 1), "link_gbytes_s"),
    (lambda: cs.fixed_for_share(1.0, 0, 1), "share"),
])
def test_bad_arguments_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
