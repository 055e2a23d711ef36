"""Cold start as a share of response time: streaming (slice-by-slice) loading against whole-model loading.

EIF seed, Sec III-IV-C (d) and V-D. EIF's Data Gathering Unit streams the model into a double-buffered
weight buffer while the Computing Unit works on the slice before, so computing starts after the first
slice and the remaining transfer overlaps it. CPU and GPU INaaS load the whole model (plus, unless the
framework is resident in the container, the library) before computing. Published shares of response
time (rpc_figures): about 5 % for EIF (Sec V-D), 91 % GPU and 73 % CPU with model and library loading
(Sec I, from its ref [1]). Units: bytes, GB/s (1e9 B/s), seconds; the table reports ms and fractions.
"""

import math
from typing import TYPE_CHECKING, Optional

from pydantic import BaseModel, ConfigDict

from engine.fpga.model import PAC_A10_PCIE_GEN, PAC_A10_PCIE_LANES, FpgaModelError
from engine.stages.pcie import PCIE_X16_GBPS

if TYPE_CHECKING:
    import pandas as pd

# EIF seed, Table II: Block RAM used by the 48-thread build, bits.
EIF_BRAM_USED_BITS = 13_762_560
EIF_THREADS_BUILT = 48
# EIF seed, Sec V-E: per thread a double buffer for model data and an input and an output activation buffer.
EIF_BUFFERS_PER_THREAD = 4
#: One weight slice, bytes: Block RAM per thread split evenly over its four buffers (an estimate: the
#: seed does not give buffer sizes) = 13,762,560 / 48 / 4 / 8 = 8,960 B.
EIF_SLICE_BYTES = EIF_BRAM_USED_BITS / EIF_THREADS_BUILT / EIF_BUFFERS_PER_THREAD / 8
# Published shares of response time (rpc_figures "EIF seed" cold_start rows).
EIF_COLD_START_SHARE = 0.05  # Sec V-D, streaming
GPU_COLD_START_SHARE = 0.91  # Sec I, model + library loading
CPU_COLD_START_SHARE = 0.73  # Sec I, model + library loading


class ColdStart(BaseModel):
    """Cold start and response time of one request that finds its model not yet loaded."""

    model_config = ConfigDict(frozen=True)

    platform: str
    loading: str  # 'streaming' | 'whole-model'
    cold_start_s: float  # from the request to the first computation
    compute_s: float
    response_s: float
    share: float  # cold_start_s / response_s


def pcie_gbytes_s(gen: int, lanes: int) -> float:
    """Per-direction PCIe bandwidth (GB/s) of a link: the x16 figure (rpc_figures pcie_spec) x lanes / 16."""
    if gen not in PCIE_X16_GBPS:
        raise FpgaModelError(f"pcie_gen must be one of {', '.join(map(str, PCIE_X16_GBPS))}, got {gen!r}")
    if not 1 <= lanes <= 16:
        raise FpgaModelError(f"lanes must be 1..16, got {lanes!r}")
    return PCIE_X16_GBPS[gen] * lanes / 16


def _check(**values: float) -> None:
    for name, v in values.items():
        if v is None or not v >= 0 or not math.isfinite(v):
            raise FpgaModelError(f"{name} must be a finite number >= 0, got {v!r}")


def streaming(weights_bytes: float, slice_bytes: float, link_gbytes_s: float, compute_s: float,
              setup_s: float = 0.0, platform: str = "fpga") -> ColdStart:
    """Slice-by-slice loading overlapped with computing (EIF Sec IV-C (d), V-D).

    cold start = setup + first slice / bandwidth; response = cold start + max(compute, rest / bandwidth),
    since the rest of the model streams in while the first slices compute (double buffering).
    """
    _check(weights_bytes=weights_bytes, slice_bytes=slice_bytes, compute_s=compute_s, setup_s=setup_s)
    if not link_gbytes_s > 0:
        raise FpgaModelError(f"link_gbytes_s must be positive, got {link_gbytes_s!r}")
    first = min(slice_bytes, weights_bytes)
    bw = link_gbytes_s * 1e9
    cold = setup_s + first / bw
    response = cold + max(compute_s, (weights_bytes - first) / bw)
    return ColdStart(platform=platform, loading="streaming", cold_start_s=cold, compute_s=compute_s,
                     response_s=response, share=cold / response if response > 0 else 0.0)


def whole_model(weights_bytes: float, link_gbytes_s: Optional[float], compute_s: float, init_s: float = 0.0,
                platform: str = "gpu") -> ColdStart:
    """Load the whole model, then compute (EIF Sec I, II-B: CPU and GPU INaaS).

    cold start = library initialisation + weights / bandwidth; response = cold start + compute.
    link_gbytes_s None: the model is used where it lies (CPU INaaS reads host memory, Sec V-A).
    """
    _check(weights_bytes=weights_bytes, compute_s=compute_s, init_s=init_s)
    if link_gbytes_s is not None and not link_gbytes_s > 0:
        raise FpgaModelError(f"link_gbytes_s must be positive or None, got {link_gbytes_s!r}")
    cold = init_s + (weights_bytes / (link_gbytes_s * 1e9) if link_gbytes_s else 0.0)
    response = cold + compute_s
    return ColdStart(platform=platform, loading="whole-model", cold_start_s=cold, compute_s=compute_s,
                     response_s=response, share=cold / response if response > 0 else 0.0)


def fixed_for_share(share: float, load_s: float, after_s: float) -> float:
    """Fixed start-up time (s) at which the cold start takes `share` of the response.

    share = (fixed + load) / (fixed + load + after), so fixed = share x after / (1 - share) - load, where
    `load` is the loading before the first computation and `after` what follows it (whole-model: the
    compute; streaming: max(compute, rest of the transfer)). For CPU/GPU the fixed part is the library
    initialisation, for the FPGA the set-up (MMIO trap, page tables, DMA). Negative when the loading
    alone already exceeds the share.
    """
    if not 0 <= share < 1:
        raise FpgaModelError(f"share must be a fraction in [0, 1), got {share!r}")
    _check(load_s=load_s, after_s=after_s)
    return share * after_s / (1 - share) - load_s


def cold_start_table(weights_mb: float, fpga_ms: float, gpu_ms: float, cpu_ms: float, *,
                     fpga_pcie: tuple[int, int] = (PAC_A10_PCIE_GEN, PAC_A10_PCIE_LANES),
                     gpu_pcie: tuple[int, int] = (3, 16), slice_bytes: float = EIF_SLICE_BYTES,
                     fpga_setup_ms: float = 0.0, library_init_ms: float = 0.0) -> "pd.DataFrame":
    """One row per platform: FPGA streaming, GPU and CPU whole-model loading, with the published shares.

    weights_mb: model size (MB, 1e6 B); *_ms: compute time of one request on each platform; the GPU
    loads over PCIe (default Gen3 x16, the seed's TITAN RTX), the CPU uses the model in host memory.
    library_init_ms: framework loading on CPU and GPU (0: container-resident, the seed's Sec V-A
    baseline); fpga_setup_ms: the FPGA's fixed set-up (0: the seed finds MMIO redirection close to
    zero, Sec V-C). `fixed_to_match_ms` is the fixed time that would reproduce the published share.
    """
    w = weights_mb * 1e6
    fpga_bw, gpu_bw = pcie_gbytes_s(*fpga_pcie), pcie_gbytes_s(*gpu_pcie)
    fixed = (fpga_setup_ms, library_init_ms, library_init_ms)
    rows = [
        (streaming(w, slice_bytes, fpga_bw, fpga_ms / 1e3, fpga_setup_ms / 1e3, "fpga"), EIF_COLD_START_SHARE,
         "EIF seed, Sec V-D"),
        (whole_model(w, gpu_bw, gpu_ms / 1e3, library_init_ms / 1e3, "gpu"), GPU_COLD_START_SHARE,
         "EIF seed, Sec I (model + library)"),
        (whole_model(w, None, cpu_ms / 1e3, library_init_ms / 1e3, "cpu"), CPU_COLD_START_SHARE,
         "EIF seed, Sec I (model + library)"),
    ]
    import pandas as pd  # heavy (~0.3 s to import): loaded where a DataFrame is made, not by `evaluate`
    return pd.DataFrame([{
        "platform": r.platform, "loading": r.loading, "cold_start_ms": r.cold_start_s * 1e3,
        "compute_ms": r.compute_s * 1e3, "response_ms": r.response_s * 1e3, "cold_start_share": r.share,
        "published_share": pub, "published_source": src,
        "fixed_to_match_ms": fixed_for_share(pub, r.cold_start_s - f / 1e3, r.response_s - r.cold_start_s) * 1e3}
        for (r, pub, src), f in zip(rows, fixed)])
