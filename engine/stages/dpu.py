"""The FPGA DPU of PREBA (seed section 4.2): one item's time on its compute units, its PCIe traffic, and the
CUs and cards a rate needs. Units: seconds, items/s, bytes, GB/s (10^9 B/s).

Defaults and where they come from:
- DPU (PREBA 4.2 gives no per-CU timings; derived): image CU II = DPU_IMAGE_II_MS_PER_MP x MP, the
  JPEG decoder being the slowest unit of the pipelined CU. 1.85 ms/MP = Vitis Codec Library
  jpegDecoder on t0.jpg (616x516, compression 9.3, ImageNet-like) 0.346 ms at 300 MHz (cosim),
  x 1.70, the hardware/cosim ratio of android.jpg on a U50 (1.515 vs 0.889 ms) [xilinx.github.io/
  Vitis_Libraries/codec/2021.2/benchmark.html]; latency = II + 0.05 ms (resize/crop/normalise tail of
  a 224x224x3 stream; assumption). Audio: two CU types (PREBA Fig 11b/12c), resample+mel 0.17 ms and
  normalise 0.08 ms per audio second (assumption: 1 sample/cycle at 300 MHz through an STFT of n_fft
  512, hop 160; normalise = 3 passes over 80x100 mel values per second); an item's latency is the
  sum, capacity is limited by the slower type. Consistency check: PREBA's DPU traffic, 6.13 GB/s for
  MobileNet, is ~8.4k img/s at ~0.73 MB per image, i.e. >= 6 image CUs on its one U55C card.
"""

import math

from pydantic import BaseModel, ConfigDict

from engine.stages.pcie import pcie_gbps

JPEG_BYTES_PER_MP = 3.37e5  # torchcodec #1620 row: 480p JPEG 138.0 KB at 0.41 MP
TENSOR_BYTES = 3 * 224 * 224 * 4  # FP32 3x224x224 (models.csv request_bytes)
PCM_BYTES_PER_S = 32_000  # 16 kHz 16-bit mono (models.csv)
MEL_BYTES_PER_S = 80 * 100 * 4  # 80 mel bands x 100 frames/s x FP32
DPU_IMAGE_II_MS_PER_MP, DPU_IMAGE_TAIL_MS = 1.85, 0.05
DPU_MEL_MS_PER_S, DPU_NORM_MS_PER_S = 0.17, 0.08
DPU_HOST_CPU_S = 20e-6  # assumption: XRT enqueue + completion per request (PREBA 6.2: CPU power -35.4%)
DPU_CUS_PER_CARD = 8  # assumption: PREBA's single U55C sustains ~8.4k img/s, >= 6 CUs at II ~0.69 ms


class DpuSizing(BaseModel):
    """CUs (of the bottleneck CU type) and cards for a rate; PCIe GB/s used vs the link's."""
    model_config = ConfigDict(frozen=True)
    cus_needed: int
    cards_needed: int
    pcie_gbps_used: float
    pcie_gbps_available: float
    pcie_ok: bool


def dpu_bytes_per_item(pipeline: str, size: float) -> float:
    """CPU<->DPU bytes per item: raw input in + preprocessed tensor out (PREBA 4.2 'PCIe bandwidth')."""
    return JPEG_BYTES_PER_MP * size + TENSOR_BYTES if pipeline == "image" else (PCM_BYTES_PER_S
                                                                                 + MEL_BYTES_PER_S) * size


def dpu_cu_times(pipeline: str, size: float) -> tuple[float, float]:
    """(latency_s, initiation interval_s) of one item on the DPU's CUs (defaults in the module doc)."""
    if pipeline == "image":
        ii = DPU_IMAGE_II_MS_PER_MP * size / 1e3
        return ii + DPU_IMAGE_TAIL_MS / 1e3, ii
    mel, norm = DPU_MEL_MS_PER_S * size / 1e3, DPU_NORM_MS_PER_S * size / 1e3
    return mel + norm, max(mel, norm)


def dpu_sizing(rate_items_per_s: float, ii_s: float, bytes_per_item: float, pcie_gen: int = 4,
               cus_per_card: int = DPU_CUS_PER_CARD) -> DpuSizing:
    """CUs (of the bottleneck type) and cards to sustain `rate`, and the PCIe traffic against the link."""
    cus = max(1, math.ceil(rate_items_per_s * ii_s - 1e-9))
    used, have = rate_items_per_s * bytes_per_item / 1e9, pcie_gbps(pcie_gen)
    return DpuSizing(cus_needed=cus, cards_needed=math.ceil(cus / cus_per_card), pcie_gbps_used=used,
                     pcie_gbps_available=have, pcie_ok=used <= have)
