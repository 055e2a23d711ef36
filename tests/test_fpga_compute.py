"""EIF accelerator compute time and Fig 9a's comparison (engine.fpga.compute): the law, its data, its edges."""

import pandas as pd
import pytest

from engine.estimator.roofline import op_table
from engine.fpga import compute as fc
from engine.fpga.coldstart import EIF_SLICE_BYTES, pcie_gbytes_s
from engine.fpga.model import FpgaModelError
from tests.conftest import SEED

FIGURES = pd.read_csv(SEED / "rpc_figures.csv", keep_default_na=False)


def figure(source: str, item: str, metric: str) -> float:
    rows = FIGURES[(FIGURES.source.str.startswith(source)) & (FIGURES["item"] == item) & (FIGURES.metric == metric)]
    assert len(rows) == 1, (source, item, metric, len(rows))
    return float(rows.value.iloc[0])


def _ops(*layers):
    """An op table from (op_class, flops, weight_elems) tuples."""
    return op_table("toy", [dict(op=i, op_class=c, flops=f, weight_elems=w, in_elems=1.0, out_elems=1.0, ref_len=None,
                                 flops_len_power=0, in_len_power=0, out_len_power=0, fusable=False)
                            for i, (c, f, w) in enumerate(layers)])


def test_constants_are_the_published_rows():
    assert fc.EIF_CLOCK_HZ == figure("EIF seed, Sec V-A", "EIF accelerator computing clock", "clock") * 1e6
    assert fc.EIF_BYTES_PER_WEIGHT == figure("EIF seed, Sec V-A", "EIF arithmetic width", "bytes per value")
    assert fc.EIF_DSP_BLOCKS == figure("EIF seed, Table II", "DSP blocks used by the 48-thread EIF", "DSP blocks")
    assert fc.ARRIA10_MULTIPLIERS_PER_DSP == figure("intel.com", "Arria 10 variable-precision DSP block",
                                                    "multipliers per DSP block")


def test_an_accelerator_has_its_share_of_the_dsp_blocks_times_two_multipliers():
    assert fc.multipliers_per_accelerator() == 640 / 8 * 2 == 160
    assert fc.multipliers_per_accelerator(640, 4, 1) == 160
    with pytest.raises(FpgaModelError, match="accelerators"):
        fc.multipliers_per_accelerator(640, 0)


def test_compute_time_is_macs_over_multipliers_times_clock():
    assert fc.compute_s(1.6e10, 160) == pytest.approx(1.0)  # 160 x 100 MHz = 16 GMAC/s
    assert fc.compute_s(1.6e10, 320) == pytest.approx(0.5)
    for bad in ((-1.0, 160), (float("nan"), 160), (1.0, 0)):
        with pytest.raises(FpgaModelError):
            fc.compute_s(*bad)


def test_only_gemm_operators_run_on_the_array():
    ops = _ops(("conv", 2e6, 100.0), ("memory", 5e5, 0.0), ("matmul", 4e6, 300.0))
    assert fc.gemm_macs(ops) == pytest.approx(3e6)  # (2e6 + 4e6) / 2; the memory op's FLOPs are not MACs
    assert fc.weight_bytes(ops) == 800.0 and fc.first_layer_bytes(ops) == 200.0


def test_a_compute_bound_request_waits_for_the_first_slice_then_the_array():
    ops = _ops(("conv", 3.2e9, 1000.0))  # 1.6e9 MACs: 0.1 s on 160 multipliers; 2 kB of weights
    r = fc.fpga_request(ops)
    bw = pcie_gbytes_s(3, 8) * 1e9
    assert r.cold_start_s == pytest.approx(min(EIF_SLICE_BYTES, 2000.0) / bw)
    assert r.response_s == pytest.approx(r.cold_start_s + 0.1)


def test_a_transfer_bound_request_streams_the_rest_of_the_model():
    ops = _ops(("matmul", 2.0, 5e8))  # 1 GB of 16-bit weights, one MAC
    r = fc.fpga_request(ops)
    bw = pcie_gbytes_s(3, 8) * 1e9
    assert r.response_s == pytest.approx(1e9 / bw)  # first slice + rest = the whole model over the link


def test_the_gpu_streams_a_layer_at_a_time_over_its_own_link():
    ops = _ops(("conv", 2e6, 1e6), ("matmul", 2e6, 9e6))
    g = fc.gpu_request(ops, gpu_compute_s=1e-6)
    bw = pcie_gbytes_s(3, 16) * 1e9
    assert g.cold_start_s == pytest.approx(2e6 / bw)  # the first layer's 16-bit weights
    assert g.response_s == pytest.approx(2e7 / bw)


def test_speedup_is_gpu_response_over_fpga_response_and_grows_with_the_gpu_time():
    ops = _ops(("conv", 3.2e9, 1e6))
    slow, fast = fc.compare(ops, 1.0), fc.compare(ops, 0.01)
    assert slow.speedup_vs_gpu == pytest.approx(slow.gpu.response_s / slow.fpga.response_s)
    assert slow.speedup_vs_gpu > fast.speedup_vs_gpu
    assert fc.compare(ops, 1.0, multipliers=320).speedup_vs_gpu > slow.speedup_vs_gpu  # a faster array
