"""The EIF accelerator's compute time and a batch-1 request's response time, from the design the paper states.

EIF seed: the Computing Unit is a systolic array of processing elements whose multipliers issue one
multiplication per cycle (Sec IV-B, IV-C (e)); the computing logic runs at 100 MHz in 16-bit fixed point
(Sec V-A); the 48-thread build (8 accelerators) uses 640 DSP blocks (Table II); an Arria 10 DSP block holds two
18 x 19 multipliers (Intel Arria 10 device overview), so one 16-bit multiplication each. The paper does not
state the multiplications per PE per cycle, so the multipliers of an accelerator are its share of the DSP
blocks times two: an upper bound (every DSP block feeding the arrays), the most favourable reading for EIF.

A request on a dedicated accelerator (Fig 9a: no temporal multiplexing) streams its model over the board's
PCIe link while the array computes (Sec IV-C (d), V-D): engine.fpga.coldstart.streaming. The GPU baseline
the paper compares with is upgraded to stream too, a layer at a time (Sec V-A, V-D): the same law with the
first layer as the first slice and the GPU's own compute time. Every published number here is a row of
data/seed/rpc_figures.csv (tests/test_fpga_compute.py checks them).
Units: multiply-accumulates (MACs), Hz, bytes, GB/s (1e9 B/s), seconds.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from engine.estimator.roofline import OpTable
from engine.fpga.coldstart import EIF_SLICE_BYTES, ColdStart, pcie_gbytes_s, streaming
from engine.fpga.model import EIF_ACCELERATORS_PER_BOARD, PAC_A10_PCIE_GEN, PAC_A10_PCIE_LANES, FpgaModelError
from engine.vocab import OpClass

# EIF seed, Sec V-A: the accelerator's computing logic clock, and its arithmetic (16-bit fixed point).
EIF_CLOCK_HZ = 100e6
EIF_BYTES_PER_WEIGHT = 2
# EIF seed, Table II: DSP blocks used by the 48-thread build (eight accelerators).
EIF_DSP_BLOCKS = 640
# Intel Arria 10 device overview, variable-precision DSP block: two 18 x 19 multipliers per block.
ARRIA10_MULTIPLIERS_PER_DSP = 2
#: operator classes a GEMM systolic array computes (Sec IV-C (e): FC, MLP and convolution map to GEMM); the
#: memory class (activations, pooling) runs in the lookup-table activation layer (Sec V-E), not the array
GEMM_CLASSES = (OpClass.CONV, OpClass.DEPTHWISE, OpClass.MATMUL, OpClass.ATTENTION)


def multipliers_per_accelerator(dsp_blocks: int = EIF_DSP_BLOCKS, accelerators: int = EIF_ACCELERATORS_PER_BOARD,
                                per_block: int = ARRIA10_MULTIPLIERS_PER_DSP) -> float:
    """16-bit multipliers of one accelerator: its share of the build's DSP blocks x multipliers per block.

    EIF Table II (640 DSP blocks for 8 accelerators) x Arria 10's two 18 x 19 multipliers per block = 160.
    An upper bound: the paper does not say how many DSP blocks serve other logic.
    """
    for name, v in (("dsp_blocks", dsp_blocks), ("accelerators", accelerators), ("per_block", per_block)):
        if int(v) != v or v < 1:
            raise FpgaModelError(f"{name} must be a whole number >= 1, got {v!r}")
    return dsp_blocks / accelerators * per_block


def gemm_macs(ops: OpTable) -> float:
    """Multiply-accumulates of one batch-1 inference on the array: FLOPs / 2 of the GEMM-class operators.

    model_costs.csv counts 2 FLOPs per MAC (engine.estimator.op_flops); the memory class is left out.
    """
    keep = [c in GEMM_CLASSES for c in ops.op_class]
    return float(sum(f for f, k in zip(ops.flops, keep) if k)) / 2.0


def compute_s(macs: float, multipliers: float, clock_hz: float = EIF_CLOCK_HZ) -> float:
    """Seconds of a dedicated systolic array: MACs / (multipliers x clock), one multiplication per multiplier
    per cycle (EIF Sec IV-B: a PE's multiplier takes one operand pair per cycle; Sec V-A: 100 MHz)."""
    if not macs >= 0 or not math.isfinite(macs):
        raise FpgaModelError(f"macs must be a finite number >= 0, got {macs!r}")
    if not multipliers > 0 or not clock_hz > 0:
        raise FpgaModelError(f"multipliers and clock_hz must be positive, got {multipliers!r}, {clock_hz!r}")
    return macs / (multipliers * clock_hz)


def weight_bytes(ops: OpTable, bytes_per_weight: float = EIF_BYTES_PER_WEIGHT) -> float:
    """The model's weights as loaded (bytes): weight elements x bytes per weight (16-bit on EIF, Sec V-A)."""
    return float(ops.weight_elems.sum()) * bytes_per_weight


def first_layer_bytes(ops: OpTable, bytes_per_weight: float = EIF_BYTES_PER_WEIGHT) -> float:
    """Bytes of the first operator with weights: what a layer-streaming CPU/GPU loads before computing (Sec V-D)."""
    for w in ops.weight_elems:
        if w > 0:
            return float(w) * bytes_per_weight
    return 0.0


class Comparison(BaseModel):
    """One model at batch 1 on a dedicated EIF accelerator and on a layer-streaming GPU (Fig 9a's set-up)."""

    model_config = ConfigDict(frozen=True)

    model: str
    macs: float
    multipliers: float
    fpga: ColdStart
    gpu: ColdStart

    @property
    def speedup_vs_gpu(self) -> float:
        """GPU response / EIF response (Fig 9a's 'speedup')."""
        return self.gpu.response_s / self.fpga.response_s


def fpga_request(ops: OpTable, *, multipliers: float | None = None, clock_hz: float = EIF_CLOCK_HZ,
                 slice_bytes: float = EIF_SLICE_BYTES,
                 pcie: tuple[int, int] = (PAC_A10_PCIE_GEN, PAC_A10_PCIE_LANES)) -> ColdStart:
    """A batch-1 request on a dedicated EIF accelerator: the .bin streams over the PAC's PCIe Gen3 x8 while the
    array computes (Sec IV-C (d), V-D): cold start = first slice / link; response = that + max(compute, rest)."""
    mults = multipliers_per_accelerator() if multipliers is None else multipliers
    return streaming(weight_bytes(ops), slice_bytes, pcie_gbytes_s(*pcie), compute_s(gemm_macs(ops), mults, clock_hz),
                     platform="fpga")


def gpu_request(ops: OpTable, gpu_compute_s: float, *, bytes_per_weight: float = EIF_BYTES_PER_WEIGHT,
                pcie: tuple[int, int] = (3, 16)) -> ColdStart:
    """A batch-1 request on the paper's streaming GPU baseline (Sec V-A: the model loads from host memory to GPU
    memory, upgraded to overlap loading and computing; Sec V-D: at least one layer loads before computing).

    bytes_per_weight defaults to the FPGA's 2: Table I's GPU weight sizes are within 6 % of the EIF .bin sizes
    for DCGAN, DARKNET and LeNet, so both load about as many bytes. pcie: the TITAN RTX's Gen3 x16.
    """
    return streaming(weight_bytes(ops, bytes_per_weight), first_layer_bytes(ops, bytes_per_weight),
                     pcie_gbytes_s(*pcie), gpu_compute_s, platform="gpu")


def compare(ops: OpTable, gpu_compute_s: float, **fpga_kw) -> Comparison:
    """Fig 9a's comparison for one model: a dedicated EIF accelerator against a streaming GPU."""
    mults = fpga_kw.pop("multipliers", None) or multipliers_per_accelerator()
    return Comparison(model=ops.model, macs=gemm_macs(ops), multipliers=mults,
                      fpga=fpga_request(ops, multipliers=mults, **fpga_kw), gpu=gpu_request(ops, gpu_compute_s))
