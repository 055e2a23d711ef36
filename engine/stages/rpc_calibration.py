"""Paper vs model for the RPC path: the seed figures as data, and the model's value for each.

Two calibration sets:
- SplitRPC (Kumar et al. 2023): the Table 1 services on the Table 2 testbed (100GbE, PCIe Gen3 switch,
  A100 40GB), E2E normalised to gRPC-VMA (Sec 6.2, Fig 8), the motivating gRPC breakdown (Sec 1-2, Fig 1)
  and the O2 orchestration slowdown (Sec 3.2.1, Fig 3);
- GPU runtime primitives: Table I (CUDA-Copy vs GPU-DMA, batch 8, V100, Sec V-B) and the completion
  notification latencies (Sec V-A, Fig 6a).
`calibration_table()` returns one row per figure; tests/test_rpc.py asserts each within its tolerance and
the RPC page can show the same rows.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from engine.stages.rpc import PRESETS, RpcBreakdown, RpcComponents, rpc_breakdown, with_changes
from engine.vocab import RpcPreset


class Service(BaseModel):
    """A SplitRPC Table 1 service: GPU time on A100 (us), kernel count, request/response bytes."""

    model_config = ConfigDict(frozen=True)
    name: str
    model: str  # the models.csv row
    gpu_us: float
    kernels: int
    request_bytes: int
    response_bytes: int


#: SplitRPC Table 1 (Sec 5.5). 588 KiB = 602112 B (3x224x224 FP32), 3.9 KiB = 4000 B (1000 FP32 logits).
SERVICES: tuple[Service, ...] = (
    Service(name="LeNet", model="lenet", gpu_us=61, kernels=12, request_bytes=784, response_bytes=40),
    Service(name="LSTM", model="lstm", gpu_us=198, kernels=32, request_bytes=8192, response_bytes=1024),
    Service(name="ResNet18", model="resnet18", gpu_us=588, kernels=50, request_bytes=602112, response_bytes=4000),
    Service(name="ResNet50", model="resnet50", gpu_us=1248, kernels=95, request_bytes=602112, response_bytes=4000),
    Service(name="BERT", model="bert-splitrpc", gpu_us=2042, kernels=172, request_bytes=6152, response_bytes=2056),
)


class Figure(BaseModel):
    """A published figure, where it is, and the tolerance the model meets (absolute, in `unit`)."""

    model_config = ConfigDict(frozen=True)
    key: str
    what: str
    paper: float
    unit: Literal["%", "x", "ms", "us", "cycles", "rps"]
    where: str
    tolerance: float
    asserted: bool = True  # False: shown for honesty, known to be missed (see note)
    note: str = ""


FIGURES: tuple[Figure, ...] = (
    Figure(key="pnic_reduction_avg", what="SplitRPC-pNIC E2E reduction vs gRPC-VMA, mean of 5", paper=52,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="pnic_reduction_lenet", what="SplitRPC-pNIC E2E reduction vs gRPC-VMA, LeNet", paper=74,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="snic_reduction_avg", what="SplitRPC-sNIC E2E reduction vs gRPC-VMA, mean of 5", paper=47,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="snic_reduction_lenet", what="SplitRPC-sNIC E2E reduction vs gRPC-VMA, LeNet", paper=72,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="dm_share_grpc_bypass_avg", what="data movement share of E2E, gRPC-VMA, mean of 5", paper=49,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="dm_share_pnic_avg", what="data movement share of E2E, SplitRPC-pNIC, mean of 5", paper=2,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=1.5),
    Figure(key="lynx_slowdown_lenet", what="Lynx-sNIC E2E over gRPC-VMA, LeNet", paper=2.1, unit="x",
           where="SplitRPC Sec 6.2, Fig 8", tolerance=0.2),
    Figure(key="lynx_slowdown_lstm", what="Lynx-sNIC E2E over gRPC-VMA, LSTM", paper=2.7, unit="x",
           where="SplitRPC Sec 6.2, Fig 8", tolerance=0.2),
    Figure(key="pnic_over_local_avg", what="SplitRPC-pNIC E2E over SplitRPC-local, mean of 5", paper=14,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="pnic_over_local_resnet18", what="SplitRPC-pNIC E2E over SplitRPC-local, ResNet18", paper=35,
           unit="%", where="SplitRPC Sec 6.2, Fig 8", tolerance=3),
    Figure(key="pnic_over_local_bert", what="SplitRPC-pNIC E2E over SplitRPC-local, BERT", paper=2, unit="%",
           where="SplitRPC Sec 6.2, Fig 8", tolerance=2),
    Figure(key="snic_cap_resnet18", what="SplitRPC-sNIC ARM-core cap, ResNet18 (inferred: degrades above 2500 RPS "
           "at about 75% of its cap)", paper=3300, unit="rps", where="SplitRPC Sec 6.4-6.5, Fig 10-11", tolerance=800),
    Figure(key="o2_slowdown_lenet", what="GPU-managed (O2) over CPU-managed (O1) GPU+orchestration, LeNet",
           paper=8.5, unit="x", where="SplitRPC Sec 3.2.1, Fig 3 ('8-9x')", tolerance=0.5),
    Figure(key="dm_share_grpc_lenet", what="data movement share of E2E, gRPC (kernel stack), LeNet", paper=73,
           unit="%", where="SplitRPC Sec 2, Fig 1", tolerance=5),
    Figure(key="serdes_share_grpc_max", what="client+server proc share of E2E, gRPC, max (paper: <9%, ResNet18)",
           paper=9, unit="%", where="SplitRPC Sec 2, Fig 1", tolerance=1.5),
    Figure(key="grpc_tax_resnet50", what="gRPC RPC tax (E2E - GPU), ResNet50", paper=980, unit="us",
           where="SplitRPC Sec 1 ('approx 980 us')", tolerance=300, asserted=False,
           note="missed: Fig 8's figures (same testbed, measured) need gRPC to spend well over 1 ms on a 588 KiB "
                "request under any components that meet them (rpc_fit_bounds); Sec 1's figure is an illustration "
                "whose payload is not stated"),
    Figure(key="tableI_cudacopy_alexnet", what="CUDA-Copy batch-8 latency = GPU-DMA 3.67 ms + model saving, AlexNet",
           paper=4.01, unit="ms", where="GPU-primitives Sec V-B, Table I", tolerance=0.3),
    Figure(key="tableI_cudacopy_resnet50", what="CUDA-Copy batch-8 latency = GPU-DMA 9.76 ms + model saving, ResNet-50",
           paper=10.53, unit="ms", where="GPU-primitives Sec V-B, Table I", tolerance=0.3),
    Figure(key="tableI_cudacopy_vgg19", what="CUDA-Copy batch-8 latency = GPU-DMA 30.49 ms + model saving, VGG-19",
           paper=30.95, unit="ms", where="GPU-primitives Sec V-B, Table I", tolerance=0.3),
    Figure(key="cycles_cudacopy", what="CPU cycles to move 8 images to the GPU, CUDA-Copy (2.4 GHz)", paper=2506216,
           unit="cycles", where="GPU-primitives Sec V-B", tolerance=125000),
    Figure(key="cycles_gpudma", what="CPU cycles to move 8 images to the GPU, GPU-DMA (2.4 GHz)", paper=86263,
           unit="cycles", where="GPU-primitives Sec V-B", tolerance=4300),
    Figure(key="synclite_alexnet", what="AlexNet batch 1 with Sync-lite (polling 100 us)", paper=3.2, unit="ms",
           where="GPU-primitives Sec V-A, Fig 6a", tolerance=0.02),
    Figure(key="callback_alexnet", what="AlexNet batch 1 with a callback", paper=3.8, unit="ms",
           where="GPU-primitives Sec V-A, Fig 6a", tolerance=0.02),
    Figure(key="blocking_alexnet", what="AlexNet batch 1 with synchronize (blocking)", paper=4.17, unit="ms",
           where="GPU-primitives Sec V-A, Fig 6a", tolerance=0.02),
    Figure(key="resnet50_blocking_over_callback_gain", what="ResNet-50: Sync-lite gain over blocking / over "
           "callback (16.7% / 10.5%)", paper=1.59, unit="x", where="GPU-primitives Sec V-A", tolerance=0.05),
)

#: GPU-primitives testbed (Sec IV-A): Xeon Gold 6148 at 2.4 GHz base, one V100 on PCIe Gen3.
CPU_HZ = 2.4e9
#: Assumption: AlexNet batch-1 latency on that testbed without the notification overhead, taken as the
#: Sync-lite figure less the model's polling overhead (3.2 ms - 52 us). Not published separately.
ALEXNET_BASE_MS = 3.2 - 0.052
IMAGE_BYTES = 602112
TABLE_I_GPU_DMA_MS = {"alexnet": 3.67, "resnet50": 9.76, "vgg19": 30.49}


def _run(c: RpcComponents, s: Service, **kw) -> RpcBreakdown:
    return rpc_breakdown(c, s.request_bytes, s.response_bytes, s.kernels, s.gpu_us * 1e-6, **kw)


def _mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs)


def splitrpc_e2e(presets: dict[RpcPreset, RpcComponents] = PRESETS) -> dict[RpcPreset, dict[str, RpcBreakdown]]:
    """The model's breakdown of every Table 1 service under every preset on the Table 2 testbed (Gen3)."""
    return {p: {s.name: _run(with_changes(c, pcie_gen=3), s) for s in SERVICES} for p, c in presets.items()}


def normalised_e2e(presets: dict[RpcPreset, RpcComponents] = PRESETS) -> dict[str, dict[str, float]]:
    """Fig 8 as the model draws it: E2E of each preset / gRPC-VMA, per service."""
    runs = splitrpc_e2e(presets)
    base = runs[RpcPreset.GRPC_BYPASS]
    return {p.value: {n: bd.e2e_s / base[n].e2e_s for n, bd in r.items()} for p, r in runs.items()}


def _primitives_testbed(presets: dict[RpcPreset, RpcComponents]) -> RpcComponents:
    """Only the host->GPU copy and completion of the primitives' OpenNetVM framework: packets already in
    host memory (DPDK), network latencies excluded (Sec IV-A), no SerDes or RPC transport."""
    zero = {f: 0.0 for f in RpcComponents.model_fields if f.endswith(("_per_request", "_per_packet", "_per_byte"))
            and not f.startswith("gpu_dma")}
    return with_changes(presets[RpcPreset.GRPC_BYPASS], **zero, base_rtt_us=0.0, p2p_setup_us=0.0, link_gbps=3200,
                        pcie_gen=3, orchestration="cpu-graphs", graph_launch_us=0.0, graph_us_per_kernel=0.0,
                        completion="blocking", blocking_sync_us=0.0)


def model_figures(presets: dict[RpcPreset, RpcComponents] = PRESETS) -> dict[str, float]:
    """The model's value of every figure in FIGURES, in the figure's unit."""
    runs = splitrpc_e2e(presets)
    g, p, s, lx, loc, kern = (runs[k] for k in (RpcPreset.GRPC_BYPASS, RpcPreset.SPLITRPC_PNIC,
                                               RpcPreset.SPLITRPC_SNIC, RpcPreset.LYNX_SNIC, RpcPreset.LOCAL,
                                               RpcPreset.GRPC))
    names = [sv.name for sv in SERVICES]

    def red(r, n):
        return 100 * (1 - r[n].e2e_s / g[n].e2e_s)

    def dm(r, n):
        return 100 * r[n].data_movement_s / r[n].e2e_s

    def over_local(n):
        return 100 * (p[n].e2e_s / loc[n].e2e_s - 1)

    lenet = SERVICES[0]
    pnic = with_changes(presets[RpcPreset.SPLITRPC_PNIC], pcie_gen=3)
    o1, o2 = (_run(with_changes(pnic, orchestration=o), lenet) for o in ("cpu", "gpu"))
    out = {
        "pnic_reduction_avg": _mean(red(p, n) for n in names), "pnic_reduction_lenet": red(p, "LeNet"),
        "snic_reduction_avg": _mean(red(s, n) for n in names), "snic_reduction_lenet": red(s, "LeNet"),
        "dm_share_grpc_bypass_avg": _mean(dm(g, n) for n in names), "dm_share_pnic_avg": _mean(dm(p, n) for n in names),
        "lynx_slowdown_lenet": lx["LeNet"].e2e_s / g["LeNet"].e2e_s,
        "lynx_slowdown_lstm": lx["LSTM"].e2e_s / g["LSTM"].e2e_s,
        "pnic_over_local_avg": _mean(over_local(n) for n in names),
        "pnic_over_local_resnet18": over_local("ResNet18"), "pnic_over_local_bert": over_local("BERT"),
        "snic_cap_resnet18": s["ResNet18"].snic_capacity_rps,
        "o2_slowdown_lenet": (o2.gpu_s + o2.orchestration_s) / (o1.gpu_s + o1.orchestration_s),
        "dm_share_grpc_lenet": dm(kern, "LeNet"),
        "serdes_share_grpc_max": max(100 * (kern[n].client_proc_s + kern[n].server_proc_s) / kern[n].e2e_s
                                     for n in names),
        "grpc_tax_resnet50": (kern["ResNet50"].e2e_s - kern["ResNet50"].gpu_s) * 1e6,
    }
    out.update(_primitives_figures(presets))
    return out


def _primitives_figures(presets: dict[RpcPreset, RpcComponents]) -> dict[str, float]:
    tb = _primitives_testbed(presets)
    copy8 = {m: rpc_breakdown(with_changes(tb, copy_method=m), IMAGE_BYTES, 0, 1, 0.0, batch=8)
             for m in ("cudamemcpy", "gpu-dma")}
    saving_ms = (copy8["cudamemcpy"].e2e_s - copy8["gpu-dma"].e2e_s) * 1e3
    out = {f"tableI_cudacopy_{m}": ms + saving_ms for m, ms in TABLE_I_GPU_DMA_MS.items()}
    out["cycles_cudacopy"] = copy8["cudamemcpy"].cpu_s_per_request * 8 * CPU_HZ
    out["cycles_gpudma"] = copy8["gpu-dma"].cpu_s_per_request * 8 * CPU_HZ
    base = presets[RpcPreset.GRPC_BYPASS]
    over = {m: completion_overhead_s(with_changes(base, completion=m)) for m in ("polling", "callback", "blocking")}
    for key, m in (("synclite_alexnet", "polling"), ("callback_alexnet", "callback"), ("blocking_alexnet", "blocking")):
        out[key] = ALEXNET_BASE_MS + over[m] * 1e3
    gain = {m: over[m] - over["polling"] for m in over}  # ResNet-50: 16.7% / 10.5% = the ratio of added times
    out["resnet50_blocking_over_callback_gain"] = gain["blocking"] / gain["callback"]
    return out


def completion_overhead_s(c: RpcComponents) -> float:
    """Completion latency of components `c` (seconds); independent of the model."""
    return rpc_breakdown(c, 1, 1, 1, 1e-3).completion_s


class CalibrationRow(BaseModel):
    """One line of the paper-vs-model table (`ok`: within tolerance; `asserted`: the test requires ok)."""

    model_config = ConfigDict(frozen=True)
    key: str
    what: str
    where: str
    unit: str
    paper: float
    model: float
    tolerance: float
    asserted: bool
    note: str
    ok: bool


def calibration_table(presets: Optional[dict[RpcPreset, RpcComponents]] = None,
                      figures: tuple[Figure, ...] = FIGURES) -> list[CalibrationRow]:
    """Paper vs model, one row per figure."""
    values = model_figures(presets or PRESETS)
    return [CalibrationRow(key=f.key, what=f.what, where=f.where, unit=f.unit, paper=f.paper, model=values[f.key],
                           tolerance=f.tolerance, asserted=f.asserted, note=f.note,
                           ok=abs(values[f.key] - f.paper) <= f.tolerance) for f in figures]


def tuned_parameters() -> dict[str, str]:
    """RpcComponents fields whose default was tuned to these figures, with the reason (their description),
    plus the one value tuned inside the SplitRPC presets."""
    tuned = {name: f.description for name, f in RpcComponents.model_fields.items()
             if (f.description or "").startswith("tuned")}
    tuned["client_serdes_ns_per_byte (SplitRPC presets: 0.2)"] = ("tuned (Fig 8 ResNet18 35% over local): the "
                                                                  "client copies the payload into packets, 5 GB/s")
    return tuned
