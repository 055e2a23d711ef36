"""PREBA's view of preprocessing: throughput as partitions activate, host cores, DPU sizing, GPU decode.

PREBA (seed) section 3.3 / Figures 8-9: throughput with and without preprocessing as 1..n inference servers
(partitions) run, the CPU cores preprocessing needs to keep them fed, and CPU utilisation; section 4.2: the
FPGA DPU (CUs, PCIe traffic against the link); section 6.1 / Figure 17: the same curve for CPU, DPU and
"Ideal" (no preprocessing). GPU-side decode is this project's addition (engine.stages.preprocess).

Every number comes from the analytic engine: one design per preprocessing device (build_design), the GPU
capacity of the first k partitions (gpu_capacity_rps), and the stage models of engine.stages.preprocess.
Units: requests/s (a request carries q_mean items), items/s, ms per item, cores, GB/s (10^9 B/s).
"""

from __future__ import annotations

import math
from typing import Optional

from pydantic import BaseModel, ConfigDict

from engine.analytic import Context, build_design, capacity, sla_bounded_rate
from engine.analytic.design import Design
from engine.analytic.pipeline import librosa_fit
from engine.accelerator_side import GpuSide
from engine.analytic.rates import gpu_capacity_rps
from engine.scenario import PreprocessingSpec, Scenario
from engine.vocab import CpuAudioPipeline, PreprocessDevice
from engine.stages import StageCost
from engine.stages.dpu import DPU_CUS_PER_CARD, dpu_bytes_per_item, dpu_sizing
from engine.stages.pcie import pcie_gbps
from engine.stages.preprocess import (DecodePartition, cores_needed, cpu_cost_per_item_s, decode_partitions,
                                      preprocess_stage, sm_decode_s_per_item)
from engine.rows import as_records
from engine.studies import model_row, require_gpu, variant

#: the devices in PREBA Figure 17's order: "Ideal" (none), the CPU baseline, the DPU; then GPU decode
DEVICES = (PreprocessDevice.NONE, PreprocessDevice.CPU, PreprocessDevice.DPU, PreprocessDevice.GPU)
DEVICE_LABEL = {PreprocessDevice.NONE: "no preprocessing (PREBA 'Ideal')", PreprocessDevice.CPU: "CPU preprocessing",
                PreprocessDevice.DPU: "FPGA DPU", PreprocessDevice.GPU: "GPU decode"}


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class ScalingRow(_Row):
    """The design with its first `active_partitions` partitions serving (PREBA Figures 8, 9, 17)."""

    active_partitions: int
    added: str  # label of the partition this row adds
    rps: dict[str, float]  # requests/s per preprocessing device (PreprocessDevice value)
    preprocessing_cores: float  # CPU cores preprocessing needs at the no-preprocessing throughput
    rpc_cores: float  # host cores the RPC path needs at that throughput
    available_cores: float  # cpu_cores - cpu_reserved_cores
    cpu_utilization: float  # host CPU busy fraction at the CPU-preprocessing throughput (0..1)
    dpu_cus_needed: int  # CUs (bottleneck type) to sustain the no-preprocessing throughput
    dpu_pcie_gbps: float  # CPU<->DPU traffic at that throughput, GB/s


class DeviceRow(_Row):
    """The whole design with one preprocessing device, as the analytic engine answers it."""

    device: str
    capacity_rps: float
    bottleneck: str
    sla_bounded_rps: float
    preprocess_ms: float  # preprocessing time on a request's critical path, without queueing
    host_cpu_ms: float  # host CPU-ms per request (RPC path + preprocessing or its driver work)


class DecodeRow(_Row):
    """GPU decode on one kind of partition and what it costs the partition (engine.stages.preprocess)."""

    partition: str
    count: int  # partitions of this kind in the design
    path: str  # JPEG engine(s) beside the SMs, or CUDA decode on the slice's SMs
    decode_ms: float  # time one item holds the decoder (engine or the slice's SMs)
    decode_items_per_s: float
    inference_items_per_s: float  # the partition alone, at Batch_max, without preprocessing
    slice_share: float  # slice SM time decoding its inference rate needs, as a fraction (> 1: more than it has)
    items_per_s_with_decode: float  # inference and decode on one partition (SMs time-shared, engine in parallel)


class DpuSummary(_Row):
    """The configured DPU against what the GPUs need (PREBA 4.2)."""

    units: int
    cards: int
    ii_ms: float
    latency_ms: float
    kb_per_item: float  # raw input in + tensor out over PCIe
    capacity_items_per_s: float
    cus_needed: int  # at the no-preprocessing throughput of all partitions
    pcie_gbps_used: float
    pcie_gbps_available: float
    pcie_ok: bool


class CostPoint(_Row):
    """One preprocessing_points row of the model's pipeline (kind measured | published | derived)."""

    step: str
    device: str
    implementation: str
    input_size: float
    ms_per_item: float
    kind: str
    source: str


class CpuCostEstimate(_Row):
    """The CPU pipeline's cost per item per core at the design's input size, preferring one kind of row."""

    prefer: str  # measured | published | derived (PREBA's Librosa pipeline, fitted: engine.stages.librosa)
    ms_per_item: float
    basis: str
    found: bool  # rows of the preferred kind exist (else the estimate fell back to the other kind)


class PreprocessingStudy(_Row):
    model: str
    pipeline: str  # image | audio | none
    input_size: Optional[float]  # MP (image) or seconds (audio)
    input_unit: str
    q_mean: float  # items per request
    scaling: tuple[ScalingRow, ...]
    devices: tuple[DeviceRow, ...]
    decode: tuple[DecodeRow, ...]
    dpu: Optional[DpuSummary]
    cost_points: tuple[CostPoint, ...]
    cpu_costs: tuple[CpuCostEstimate, ...]
    notes: tuple[str, ...]


# --------------------------------------------------------------------------- helpers

def _side(gpu: GpuSide, partitions: tuple) -> GpuSide:
    """The GPU side with only these partitions. A fresh side: model_copy would share its remembered answers."""
    return type(gpu).model_validate({**dict(gpu), "partitions": tuple(partitions)})


def _host_cap(design: Design) -> float:
    return min((s.capacity_rps for s in design.host_stages), default=math.inf)


def _cpu_split(design: Design) -> tuple[float, float]:
    """(preprocessing, RPC) host CPU-seconds per request of a CPU-preprocessing design."""
    total = sum(s.host_cpu_s for s in design.host_stages)
    pre = sum(s.host_cpu_s if s.name.startswith("preprocess") else s.breakdown_s.get("preprocess_cpu", 0.0)
              for s in design.host_stages)
    return pre, total - pre


def _preprocess_ms(design: Design) -> float:
    """Preprocessing on the critical path (ms): its own stage, or its share of the shared host-CPU stage."""
    ms = 0.0
    for s in design.host_stages:
        ms += s.latency_s * 1e3 if s.name.startswith("preprocess") else s.breakdown_s.get("preprocess_cpu", 0.0) * 1e3
    return ms


def _decode_partition(gpu, name: str) -> DecodePartition:
    """A partition as the decode model sees it; an MPS share owns no JPEG engine and decodes on its SM share."""
    if name.startswith("mps:"):
        return DecodePartition(name, 0, 0, float(name.split(":")[1]) / 100)
    return decode_partitions(gpu, None if name == "full" else [name])[0]


def _decode_stage(ctx: Context, gpu_spec, row, model: str, audio_s, pcie_gen: int, decoders: list) -> StageCost:
    """GPU decode over these partitions; memoised in the context (pure, and the same for every host)."""
    return ctx.memo(("view:decode", gpu_spec, model, audio_s, pcie_gen, tuple(decoders)),
                    lambda: preprocess_stage(gpu_spec, row, ctx.preprocessing_points, 1.0, audio_s=audio_s,
                                             pcie_gen=pcie_gen, partitions=decoders))


def _design(scenario: Scenario, ctx: Context, device: PreprocessDevice) -> Design:
    return build_design(variant(scenario, ctx.book, {"preprocessing.device": device.value}), ctx)


def _gpu_cap(design: Design, k: int) -> float:
    """Requests/s the design's first k partitions sustain at their Batch_max (the analytic engine's GPU capacity)."""
    return gpu_capacity_rps(_side(design.gpu, design.gpu.partitions[:k]), design.q_mean, design.q_pmf,
                            design.scheduler)


# --------------------------------------------------------------------------- the view

def preprocessing_study(scenario: Scenario, ctx: Context) -> PreprocessingStudy:
    """PREBA's preprocessing view of a design (see the module docstring for the figures it reproduces)."""
    require_gpu(scenario)
    gpu = ctx.book.catalog.gpu(scenario.gpu.sku)
    row = model_row(ctx.book, scenario.model)
    pipeline = str(row.get("preprocess", "none"))
    needs = pipeline in ("image", "audio")
    # nothing to preprocess: every device is the no-preprocessing design (and no CPU pool is set aside)
    designs = {d: _design(scenario, ctx, d if needs else PreprocessDevice.NONE) for d in DEVICES}
    base = designs[PreprocessDevice.NONE]
    audio_s = base.gpu.input_len if pipeline == "audio" else None
    size = audio_s if pipeline == "audio" else (scenario.preprocessing.image_megapixels if needs else None)
    notes = [] if needs else [f"{scenario.model} needs no preprocessing (text: tokenisation is negligible, PREBA "
                              "4.2): every device gives the same throughput"]
    if scenario.gpu.count > 1 and needs:
        notes.append("GPU decode: the scaling curve pools the decoders of every GPU's partitions")
    decoders = [_decode_partition(gpu, p.name) for p in base.gpu.partitions]
    gpu_spec = PreprocessingSpec(device=PreprocessDevice.GPU, image_megapixels=scenario.preprocessing.image_megapixels)

    def decode_cap(k: int) -> float:  # the decode pool grows with the partitions that serve
        if not needs:
            return math.inf
        return _decode_stage(ctx, gpu_spec, row, scenario.model, audio_s, gpu.pcie_gen, decoders[:k]).capacity_rps

    dpu_times = _dpu_times(scenario, ctx, row, pipeline, size, audio_s, gpu.pcie_gen) if needs else None
    scaling = _scaling(scenario, designs, decode_cap, dpu_times, gpu.pcie_gen)
    devices = tuple(_device_row(d, x) for d, x in designs.items())
    decode = _decode_rows(gpu, decoders, gpu_spec, row, ctx, audio_s, base) if needs else ()
    dpu = _dpu_summary(scenario.preprocessing, base.q_mean, gpu.pcie_gen, dpu_times, scaling[-1]) if needs else None
    points, costs = ctx.memo(("view:costs", pipeline, size, audio_s),
                             lambda: _costs(ctx.preprocessing_points, pipeline, size, audio_s))
    if pipeline == "audio" and scenario.preprocessing.cpu_audio_pipeline == CpuAudioPipeline.LIBROSA:
        fit = librosa_fit(ctx)  # what the design's CPU pool runs: first, so the page's headline cost is its
        costs = (CpuCostEstimate(prefer="derived", ms_per_item=fit.ms_per_audio_s * audio_s, basis=fit.basis,
                                 found=True),) + costs
    return PreprocessingStudy(model=scenario.model, pipeline=pipeline, input_size=size,
                             input_unit={"image": "MP", "audio": "s of audio"}.get(pipeline, ""), q_mean=base.q_mean,
                             scaling=scaling, devices=devices, decode=decode, dpu=dpu, cost_points=points,
                             cpu_costs=costs, notes=tuple(notes))


def _dpu_times(scenario: Scenario, ctx: Context, row, pipeline: str, size: float, audio_s,
               pcie_gen: int) -> tuple[float, float, float]:
    """(latency s, initiation interval s, bytes over PCIe) of one item on the DPU: the engine's DPU stage, with
    the spec's overrides (memoised: no host cores involved)."""
    spec = scenario.preprocessing.model_copy(update={"device": PreprocessDevice.DPU, "cores": None})
    stage = ctx.memo(("view:dpu", spec, scenario.model, audio_s, pcie_gen),
                     lambda: preprocess_stage(spec, row, ctx.preprocessing_points, 1.0, audio_s=audio_s,
                                              pcie_gen=pcie_gen))
    return stage.breakdown_s["dpu_cu"], stage.service_s, dpu_bytes_per_item(pipeline, size)


def _scaling(scenario: Scenario, designs: dict, decode_cap, dpu_times, pcie_gen: int) -> tuple[ScalingRow, ...]:
    """One row per count of active partitions, in the design's order (PREBA Figures 8, 9, 17)."""
    base, cpu, gdec = designs[PreprocessDevice.NONE], designs[PreprocessDevice.CPU], designs[PreprocessDevice.GPU]
    q, free = base.q_mean, float(scenario.host.free_cores)
    pre_cpu, rpc_cpu = _cpu_split(cpu)
    # GPU decode: the design's RPC/host stage caps; the decode pool is re-sized for each k below
    rpc_cap_gdec = min((s.capacity_rps for s in gdec.host_stages if not s.name.startswith("preprocess")),
                       default=math.inf)
    rows = []
    for k in range(1, len(base.gpu.partitions) + 1):
        ideal = _gpu_cap(base, k)  # the GPUs alone: what preprocessing must keep up with
        rps = {d.value: min(_gpu_cap(x, k), _host_cap(x)) for d, x in designs.items() if d != PreprocessDevice.GPU}
        rps[PreprocessDevice.GPU.value] = min(_gpu_cap(gdec, k), decode_cap(k) / q, rpc_cap_gdec)
        sizing = dpu_sizing(ideal * q, dpu_times[1], dpu_times[2], pcie_gen) if dpu_times else None
        rows.append(ScalingRow(
            active_partitions=k, added=base.gpu.partitions[k - 1].label, rps=rps,
            preprocessing_cores=cores_needed(ideal, pre_cpu), rpc_cores=cores_needed(ideal, rpc_cpu),
            available_cores=free, cpu_utilization=min(1.0, rps["cpu"] * (pre_cpu + rpc_cpu) / free),
            dpu_cus_needed=sizing.cus_needed if sizing else 0, dpu_pcie_gbps=sizing.pcie_gbps_used if sizing else 0.0))
    return tuple(rows)


def _device_row(device: PreprocessDevice, design: Design) -> DeviceRow:
    cap, bottleneck, _ = capacity(design)
    return DeviceRow(device=device.value, capacity_rps=cap, bottleneck=bottleneck,
                     sla_bounded_rps=sla_bounded_rate(design), preprocess_ms=_preprocess_ms(design),
                     host_cpu_ms=sum(s.host_cpu_s for s in design.host_stages) * 1e3)


def _dpu_summary(spec, q: float, pcie_gen: int, dpu_times, last: ScalingRow) -> DpuSummary:
    """The configured DPU, and what all partitions at their no-preprocessing throughput need of it (PREBA 4.2)."""
    lat, ii, nbytes = dpu_times
    need = dpu_sizing(last.rps[PreprocessDevice.NONE.value] * q, ii, nbytes, pcie_gen)
    return DpuSummary(units=spec.units, cards=math.ceil(spec.units / DPU_CUS_PER_CARD), ii_ms=ii * 1e3,
                      latency_ms=lat * 1e3, kb_per_item=nbytes / 1e3, capacity_items_per_s=spec.units / ii,
                      cus_needed=need.cus_needed, pcie_gbps_used=need.pcie_gbps_used,
                      pcie_gbps_available=pcie_gbps(pcie_gen), pcie_ok=need.pcie_ok)


def _decode_rows(gpu, decoders, gpu_spec, row, ctx, audio_s, base: Design) -> tuple[DecodeRow, ...]:
    """One row per kind of partition: its decoder against its inference rate (each partition decoding its own)."""
    rows, seen = [], {}
    for p, dec in zip(base.gpu.partitions, decoders):
        seen.setdefault(p.name, [p, dec, 0])[2] += 1
    for name, (p, dec, count) in seen.items():
        inf = gpu_capacity_rps(_side(base.gpu, (p,)), base.q_mean, base.q_pmf, base.scheduler) * base.q_mean
        engine = dec.jpeg > 0 and row.get("preprocess") == "image"
        if engine:
            dec_rate = _decode_stage(ctx, gpu_spec, row, base.scenario.model, audio_s, gpu.pcie_gen,
                                     [dec]).capacity_rps
        else:  # decode on the slice's own SMs: the engine charges it to the slice's inference time
            size = audio_s if row.get("preprocess") == "audio" else gpu_spec.image_megapixels
            dec_rate = 1.0 / sm_decode_s_per_item(str(row.get("preprocess")), size, ctx.cost_table(), dec)
        # a JPEG engine runs beside the SMs; CUDA decode takes the slice's SMs away from inference
        both = min(inf, dec_rate) if engine else 1.0 / (1.0 / inf + 1.0 / dec_rate)
        path = (f"{dec.jpeg} JPEG engine(s)" if engine else
                ("CUDA decode on the SMs" if row.get("preprocess") == "image" else "mel spectrogram on the SMs"))
        rows.append(DecodeRow(partition=name, count=count, path=path, decode_ms=1e3 / dec_rate,
                              decode_items_per_s=dec_rate, inference_items_per_s=inf,
                              slice_share=0.0 if engine else inf / dec_rate,
                              items_per_s_with_decode=both))
    return tuple(rows)


def _costs(points, pipeline: str, size: Optional[float],
           audio_s: Optional[float]) -> tuple[tuple[CostPoint, ...], tuple[CpuCostEstimate, ...]]:
    """The pipeline's preprocessing_points rows (`points`: rows or a DataFrame) and the CPU cost estimated from
    measured vs published rows."""
    if pipeline not in ("image", "audio"):
        return (), ()
    rows = [r for r in as_records(points) if r["pipeline"] == pipeline]
    out = tuple(CostPoint(step=r["step"], device=r["device"], implementation=r["implementation"],
                          input_size=float(r["input_size"]), ms_per_item=float(r["ms_per_item"]), kind=r["kind"],
                          source=str(r["source"]).split(" :: ")[0]) for r in rows)
    estimates = []
    for prefer in ("measured", "published"):
        mp = {"image_megapixels": size} if pipeline == "image" else {}
        cost = cpu_cost_per_item_s(points, pipeline, audio_s=audio_s, prefer=prefer, **mp)
        estimates.append(CpuCostEstimate(prefer=prefer, ms_per_item=cost.seconds * 1e3, basis=cost.basis,
                                         found=cost.basis.startswith(prefer)))
    return out, tuple(estimates)
