"""PREBA (MIG + preprocessing DPU + batching): throughput, tail, energy, cost, the preprocessing wall, knees.

Runs the Compare page's PREBA preset (engine.seed_presets: ResNet-50 on an A100 80GB as 7 x 1g.10gb, 32
host cores, CPU vs DPU vs no preprocessing). CPU preprocessing costs come from torchvision/torchcodec
benchmarks, not from PREBA; the DPU's compute units per card were sized from PREBA's measured PCIe traffic
(Sec 4.2), so that result is in-sample and the rest out of sample. The paper averages six models on an A100
40GB as 7 x 1g.5gb; the engine has curves for none of the six (MobileNet, SqueezeNet, Swin, Conformer x2,
CitriNet), so ResNet-50 stands in, and on the 40GB 1g.5gb its ResNet-50 curve caps every device at the same
GPU rate: the comparison is made where the GPU leaves room for preprocessing to matter.
"""

from __future__ import annotations

from engine.reproduce._common import evaluate, remembered, saving_pct
from engine.reproduce.entry import Entry
from engine.scenario import load_scenario
from engine.seed_presets import build_preset
from engine.studies.preprocessing import preprocessing_study

DPU_FIT = ("preba-dpu-pcie",)  # engine.stages.preprocess.DPU_CUS_PER_CARD: sized from Sec 4.2's 6.13 GB/s
CPU, DPU, NONE = 0, 1, 2  # the preset's designs, in its order


def _designs(ctx, cost_basis: str = "capacity"):
    scenarios = remembered(ctx, "preba-preset", lambda: build_preset("preba", ctx))
    return [evaluate(ctx, s, cost_basis=cost_basis) for s in scenarios]


def _throughput(ctx) -> float:
    d = _designs(ctx)
    return d[DPU].capacity_rps / d[CPU].capacity_rps


def _ideal_share(ctx) -> float:
    d = _designs(ctx)
    return 100 * d[DPU].capacity_rps / d[NONE].capacity_rps


def _tail(ctx) -> float:
    """p99 at the preset's offered load (3,000 req/s), CPU over DPU (Fig 18: tail at the same throughput)."""
    d = _designs(ctx)
    return d[CPU].latency_ms.p99 / d[DPU].latency_ms.p99


def _per(metric: str):
    def compute(ctx):
        d = _designs(ctx)
        return getattr(d[DPU].cost, metric) / getattr(d[CPU].cost, metric)
    return compute


def _drop(ctx) -> float:
    d = _designs(ctx)
    return saving_pct(d[CPU].capacity_rps, d[NONE].capacity_rps)


def _pcie(ctx) -> float:
    def make():
        return preprocessing_study(load_scenario(build_preset("preba", ctx)[DPU], ctx.book), ctx)
    return remembered(ctx, "preba-study", make).dpu.pcie_gbps_used


_PRESET = "Compare preset 'preba': ResNet-50, A100 80GB 7 x 1g.10gb, 32 cores, gRPC, PREBA batching"
_NO_CURVE = "no latency curve for {} in the store (PREBA's models are not among the published profiles)"

ENTRIES: tuple[Entry, ...] = (
    Entry("preba-throughput", _PRESET + ", DPU vs CPU",
          "capacity ratio: CPU preprocessing (61 cores needed, 30 free) binds the host; the DPU's 8 CUs bind next. "
          "The paper's six models preprocess more per request than ResNet-50's 0.37 MP JPEG",
          _throughput, DPU_FIT),
    Entry("preba-ideal-share", _PRESET + ", DPU vs none", "DPU capacity over the no-preprocessing capacity",
          _ideal_share, DPU_FIT),
    Entry("preba-tail", _PRESET + ", p99 at 3,000 req/s, CPU over DPU",
          "the CPU design queues at the host near its capacity; the DPU design runs at a quarter of its own", _tail,
          DPU_FIT),
    Entry("preba-energy", _PRESET + ", queries per joule at capacity, DPU over CPU",
          "more queries from the same GPU and host power, plus the DPU card's watts", _per("queries_per_joule"),
          DPU_FIT),
    Entry("preba-cost", _PRESET + ", queries per USD (TCO, 3 years) at capacity, DPU over CPU",
          "throughput gain less the DPU card's price", _per("queries_per_usd"), DPU_FIT),
    Entry("preba-preprocessing-drop", _PRESET + ", CPU vs none",
          "capacity lost to the host CPU: preprocessing and the RPC path share 30 cores", _drop),
    Entry("preba-dpu-pcie", "preprocessing_study of the preset's DPU design (ResNet-50, not MobileNet)",
          "raw JPEG in + 224x224x3 tensor out per item at the no-preprocessing throughput; the CU count was "
          "sized from this figure", _pcie, DPU_FIT),
    Entry("preba-citrinet-cores", "", "", not_modelled=_NO_CURVE.format("CitriNet") + ": the cores needed are the "
          "GPU's throughput times the per-item cost, and the GPU's throughput is missing"),
    Entry("preba-ablation-dpu", "", "", not_modelled=_NO_CURVE.format("Conformer and CitriNet (the audio models "
          "of Fig 22)")),
    Entry("preba-ablation-batching", "", "", not_modelled=_NO_CURVE.format("Conformer and CitriNet") +
          "; PREBA's length-bucketed batching of audio is not in the engine"),
    Entry("preba-knee-1g-mobilenet", "", "", not_modelled=_NO_CURVE.format("MobileNet")),
    Entry("preba-knee-7g-mobilenet", "", "", not_modelled=_NO_CURVE.format("MobileNet")),
    Entry("preba-knee-1g-squeezenet", "", "", not_modelled=_NO_CURVE.format("SqueezeNet")),
)
