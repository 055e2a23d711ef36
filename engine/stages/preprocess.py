"""Preprocessing stage: CPU pool, FPGA DPU, GPU decode or none (DESIGN.md section 5; PREBA seed 3.3, 4.2).

Pure functions over the store's tables as rows (engine.rows; a DataFrame is taken too). One request is one item (PREBA section 5: single-input
requests; for n items scale service_s and host_cpu_s by n). Units: seconds, items/s, bytes, GB/s (10^9 B/s).

Defaults and where they come from (all overridable through PreprocessingSpec):
- CPU: cost per item per core from preprocessing_points (see cpu_cost_per_item_s); for audio with
  spec.cpu_audio_pipeline 'librosa', PREBA's Librosa baseline instead (engine.stages.librosa: ms per audio
  second fitted on PREBA Fig 8, passed in by the caller as a LibrosaFit). Service-time
  scv IMAGE_SCV = AUDIO_SCV = 0.3 (assumption: ImageNet pixel counts and LibriSpeech lengths vary
  with a CV of about 0.5, and the cost is roughly linear in the input size).
- DPU: the FPGA DPU's compute-unit times, PCIe traffic and sizing (engine.stages.dpu, defaults in its doc).
- GPU decode: the nvJPEG rows of preprocessing_points (A100-class, 0.372 MP): single-image latency
  0.6006 ms, batched hardware-decoder interval 0.1277 ms (~7.8k img/s) per JPEG engine (the A100
  figure per engine for other GPUs too: assumption), CUDA (hybrid) decode 0.5738 ms per image of
  full-GPU time, divided by the slice's SM share on profiles without a JPEG engine (assumption; a
  single image does not fill 108 SMs, so this is pessimistic for small slices).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, NamedTuple, Optional, Sequence

import numpy as np

from engine.order_stats import median
from engine.rows import as_records
from engine.stages.base import StageCost
from engine.stages.dpu import DPU_HOST_CPU_S, dpu_bytes_per_item, dpu_cu_times
from engine.stages.pcie import pcie_gbps
from engine.stages.librosa import LibrosaFit
from engine.vocab import CpuAudioPipeline, PreprocessDevice

if TYPE_CHECKING:  # the spec's type only
    import pandas as pd

    from engine.scenario import PreprocessingSpec

IMAGE_SCV = AUDIO_SCV = 0.3
AUDIO_DEFAULT_S = 7.0  # models.csv request_bytes convention (middle DLE audio length)
#: resize256+crop224+normalise added to a decode-only row, ms = a + b x MP: full minus decode of
#: `python -m engine profile preprocess` (Pillow 13.0 + numpy 2.4, AMD EPYC, 1 core, 2026-11-22,
#: 0.19-1.92 MP: 1.49, 2.06, 3.72, 7.77 ms), least-squares line
ADDON_MS = (0.883, 3.593)
NVJPEG_REF_MP = 0.372476
NVJPEG_DEFAULT_MS = {"single": 0.6006, "hw_batched": 0.127655, "cuda": 0.573783}
#: host CPU of GPU decode as a fraction of a CPU decode (assumptions). DALI's mixed decoder still keeps
#: 24 cores busy at batch 256 (DALI #5274: parsing and, on the hybrid path, Huffman decode on the host):
#: Huffman is about half of a libjpeg-turbo decode -> 0.5; the hardware engine decodes Huffman itself,
#: leaving header parsing and submission -> 0.1.
GPU_HOST_FRACTION = {"hw": 0.1, "cuda": 0.5}
GPU_AUDIO_HOST_FRACTION = 0.1  # assumption: PCM decode and copy stay on the host
GPU_MEL_MS_PER_S = 20 / 3600  # MLX Whisper featurisation on an Apple GPU: 20 ms per hour of audio


class CpuCost(NamedTuple):
    """Seconds per item on one core, the rows it came from, and how (measured/published, method)."""
    seconds: float
    rows: list[dict]  # preprocessing_points rows ({column: value})
    basis: str


class DecodePartition(NamedTuple):
    """One GPU partition as the decode model sees it: MIG profile or 'full', engines, SM share."""
    name: str
    jpeg: int = 0
    nvdec: int = 0
    sm_share: float = 1.0


# --------------------------------------------------------------------------- CPU cost

def _is_full(row: dict) -> bool:
    s = str(row["step"]).lower()
    return "resize" in s and "normali" in s or "mel" in s and "normali" in s


def _interp_mp(rows: list[dict], mp: float) -> tuple[float, bool]:
    """ms at `mp`: each source's curve interpolated in MP (proportional to MP outside its range),
    then the median across sources (sources disagree by 2x; the median resists one odd host)."""
    by_source: dict[tuple, dict[float, list[float]]] = {}
    for r in rows:
        sizes = by_source.setdefault((r["source"], r["measured_on"] or ""), {})
        sizes.setdefault(float(r["input_size"]), []).append(float(r["ms_per_item"]))
    vals, extrapolated = [], False
    for _, sizes in sorted(by_source.items()):
        x = np.array(sorted(sizes), dtype=float)
        y = np.array([median(sizes[k]) for k in sorted(sizes)], dtype=float)
        if x[0] <= mp <= x[-1]:
            vals.append(float(np.interp(mp, x, y)))
        else:
            end = 0 if mp < x[0] else -1
            vals.append(float(y[end] * mp / x[end]))
            extrapolated |= not 0.9 * x[0] <= mp <= 1.1 * x[-1]  # a few % off a single size is not news
    return median(vals), extrapolated


def _fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """a + b x with a, b >= 0 (through the origin if the intercept comes out negative or x is one value)."""
    b, a = np.polyfit(x, y, 1) if len(set(x)) > 1 else (0.0, -1.0)
    return (float(a), max(float(b), 0.0)) if a >= 0 else (0.0, float(np.sum(x * y) / np.sum(x * x)))


def _ordered(cpu: list[dict], prefer: str) -> list[tuple[str, list[dict]]]:
    if prefer not in ("measured", "published"):
        raise ValueError(f"prefer must be 'measured' or 'published', got {prefer!r}")
    m = ("measured", [r for r in cpu if r["kind"] == "measured"])
    p = ("published", [r for r in cpu if r["kind"] != "measured"])
    return [m, p] if prefer == "measured" else [p, m]


def _decode_rows(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["step"] == "jpeg_decode" and "libjpeg" in str(r["implementation"]).lower()
            and "arm" not in str(r["implementation"]).lower()]


def _cpu_rows(points, pipeline: str) -> list[dict]:
    return [r for r in as_records(points) if r["device"] == "cpu" and r["pipeline"] == pipeline]


def cpu_decode_s(points, image_megapixels: float = 0.37, prefer: str = "measured") -> float:
    """JPEG decode alone, seconds per image on one core (libjpeg/libjpeg-turbo rows on x86). `points`: the
    preprocessing_points rows (dicts) or DataFrame."""
    for _, rows in _ordered(_cpu_rows(points, "image"), prefer):
        dec = _decode_rows(rows)
        if dec:
            return _interp_mp(dec, image_megapixels)[0] / 1e3
    raise ValueError("no CPU JPEG decode rows in preprocessing_points")


def cpu_cost_per_item_s(points, pipeline: str, image_megapixels: float = 0.37,
                        audio_s: Optional[float] = None, prefer: str = "measured") -> CpuCost:
    """Seconds per item per core of the whole pipeline (PREBA 2.3 / Fig 4: decode, resize, crop, normalise;
    resample, FFT, mel, normalise), measured rows (kind='measured') first unless prefer='published'.
    `points`: the preprocessing_points rows (dicts) or DataFrame.

    Image: full-pipeline rows interpolated in megapixels, else decode-only rows plus ADDON_MS.
    Audio: a + b x seconds fitted to full-pipeline rows, else (published only) the sum of per-second
    costs of Librosa WAV decode+resample (PREBA's CPU baseline, section 5) and the CPU mel row.
    """
    if pipeline not in ("image", "audio"):
        raise ValueError(f"pipeline must be 'image' or 'audio', got {pipeline!r}")
    for kind, rows in _ordered(_cpu_rows(points, pipeline), prefer):
        full = [r for r in rows if _is_full(r)]
        if pipeline == "image":
            mp = image_megapixels
            if full:
                ms, ext = _interp_mp(full, mp)
                return CpuCost(ms / 1e3, full, f"{kind} full-pipeline rows, interpolated at {mp:g} MP"
                               + (" (extrapolated in proportion to MP)" if ext else ""))
            dec = _decode_rows(rows)
            if dec:
                ms, ext = _interp_mp(dec, mp)
                add = ADDON_MS[0] + ADDON_MS[1] * mp
                return CpuCost((ms + add) / 1e3, dec, f"{kind} decode-only rows at {mp:g} MP ({ms:.2f} ms"
                               + (", extrapolated" if ext else "") + f") + resize/crop/normalise add-on "
                               f"{add:.2f} ms (ADDON_MS, this project's profiler)")
        else:
            s = AUDIO_DEFAULT_S if audio_s is None else audio_s
            if full:
                a, b = _fit_line(np.array([float(r["input_size"]) for r in full]),
                                 np.array([float(r["ms_per_item"]) for r in full]))
                return CpuCost((a + b * s) / 1e3, full, f"{kind} full-pipeline rows, fit {a:.3f} ms + "
                               f"{b:.4f} ms/s x {s:g} s")
            if kind == "published":
                wav = [r for r in rows if r["step"] == "audio_decode" and "wav" in str(r["input_desc"] or "")]
                lib = [r for r in wav if str(r["implementation"]).lower().startswith("librosa")]
                wav, mel = (lib if lib else wav), [r for r in rows if r["step"] == "mel"]
                if wav and mel:
                    per_s = (median([float(r["ms_per_item"]) / float(r["input_size"]) for r in wav])
                             + median([float(r["ms_per_item"]) / float(r["input_size"]) for r in mel]))
                    return CpuCost(per_s * s / 1e3, wav + mel, f"published decode+resample "
                                   f"and mel rows, {per_s:.3f} ms per audio second x {s:g} s (the mel row "
                                   "is probably multi-threaded: per-core cost underestimated)")
    raise ValueError(f"no CPU {pipeline} rows in preprocessing_points to cost the pipeline")


# --------------------------------------------------------------------------- sizing helpers

def cores_needed(throughput_items_per_s: float, cost_per_item_s: float) -> float:
    """Cores a CPU pool needs to preprocess `throughput` items/s at `cost` s per item per core."""
    return throughput_items_per_s * cost_per_item_s


def cores_needed_curve(per_partition_throughput: Sequence[float], cost_per_item_s: float) -> list[tuple[int, float]]:
    """PREBA Fig 8/9: cores needed as 1..n partitions (vGPUs) are activated, in the given order."""
    return [(k, cores_needed(float(sum(per_partition_throughput[:k])), cost_per_item_s))
            for k in range(1, len(per_partition_throughput) + 1)]


def decode_partitions(gpu, layout: Optional[Sequence[str]] = None) -> list[DecodePartition]:
    """DecodePartitions of a catalogue Gpu: its MIG layout (profile or profile@start; 'full' for a whole GPU),
    or, with no layout, the whole GPU."""
    whole = DecodePartition("full", max((p.jpeg for p in gpu.profiles), default=0),
                            max((p.nvdec for p in gpu.profiles), default=0), 1.0)
    if not layout:
        return [whole]
    out = []
    for entry in layout:  # 'full' stands for a whole GPU (MIG off) among several
        name = entry.split("@")[0]
        if name == "full":
            out.append(whole)
        else:
            p = gpu.profile(name)
            out.append(DecodePartition(p.name, p.jpeg, p.nvdec, p.sm_count / gpu.sm_count))
    return out


# --------------------------------------------------------------------------- the stage

def _get(row, key: str, default=None):
    v = row.get(key, default) if hasattr(row, "get") else default
    return default if v is None or (isinstance(v, float) and math.isnan(v)) else v


def _nvjpeg_ms(points: list[dict]) -> tuple[dict[str, float], list[str]]:
    """The nvJPEG figures from the table's A100-class rows (module defaults where a row is missing)."""
    gpu = [r for r in points if r["device"] == "gpu" and r["step"] == "jpeg_decode"
           and "A100" in str(r["implementation"])]
    pick = {"single": [r for r in gpu if "device=cuda" in r["implementation"] and r["kind"] == "published"],
            "hw_batched": [r for r in gpu if "HW decoder" in r["implementation"]],
            "cuda": [r for r in gpu if "unfused" in r["implementation"]]}
    ms, used = dict(NVJPEG_DEFAULT_MS), []
    for k, rows in pick.items():
        if rows:
            ms[k] = float(rows[0]["ms_per_item"])
            used.append(f"{k} {ms[k]:.4f} ms: {rows[0]['source'].split(' :: ')[0]}")
    return ms, used


class CostTable:
    """preprocessing_points with its lookups remembered. Each lookup is a pure function of the table and
    its arguments, and a design sweep asks the same few (pipeline, image size) questions thousands of
    times; the table is immutable once built from the store."""

    def __init__(self, points):
        """`points`: the preprocessing_points rows ({column: value} dicts) or DataFrame."""
        self.points = as_records(points)
        self._answers: dict = {}

    def _remember(self, key: tuple, make):
        if key not in self._answers:
            self._answers[key] = make()
        return self._answers[key]

    def cpu_cost(self, pipeline: str, image_megapixels: float = 0.37, audio_s: Optional[float] = None,
                 prefer: str = "measured") -> "CpuCost":
        return self._remember(("cpu", pipeline, image_megapixels, audio_s, prefer),
                              lambda: cpu_cost_per_item_s(self.points, pipeline, image_megapixels, audio_s, prefer))

    def cpu_decode(self, image_megapixels: float) -> float:
        return self._remember(("decode", image_megapixels), lambda: cpu_decode_s(self.points, image_megapixels))

    def nvjpeg(self) -> tuple[dict[str, float], list[str]]:
        return self._remember(("nvjpeg",), lambda: _nvjpeg_ms(self.points))


def preprocess_stage(spec: PreprocessingSpec, model_row, points: "list[dict] | pd.DataFrame | CostTable", free_cores: float,
                     audio_s: Optional[float] = None, pcie_gen: int = 4, partitions: Sequence = (),
                     librosa: Optional[LibrosaFit] = None) -> StageCost:
    """StageCost of preprocessing one item on spec.device (PREBA 3.3 CPU bottleneck, 4.2 DPU, 6 'Ideal').

    model_row: a ModelRow dict/Series (preprocess 'image'|'audio'|'none'); text models cost nothing.
    free_cores: host cores left for preprocessing; pcie_gen: the DPU's link; partitions: for GPU decode,
    DecodePartition or (name, jpeg, nvdec[, sm_share]) per partition (see decode_partitions); librosa: the
    fitted cost of PREBA's Librosa pipeline (engine.stages.librosa), needed when audio runs on the CPU with
    spec.cpu_audio_pipeline 'librosa'.
    """
    table = points if isinstance(points, CostTable) else CostTable(points)
    device, pipeline = PreprocessDevice(spec.device), str(_get(model_row, "preprocess", "none"))
    name = f"preprocess:{device.value}"
    if pipeline not in ("image", "audio") or device == PreprocessDevice.NONE:
        why = ("no preprocessing (PREBA's 'Ideal')" if device == PreprocessDevice.NONE
               else f"model preprocess is {pipeline!r}: nothing to do")
        return StageCost(name=name, service_s=0.0, scv=0.0, capacity_rps=math.inf, notes=(why,))
    size = spec.image_megapixels if pipeline == "image" else (AUDIO_DEFAULT_S if audio_s is None else audio_s)
    unit, scv = ("MP", IMAGE_SCV) if pipeline == "image" else ("s of audio", AUDIO_SCV)
    if device == PreprocessDevice.CPU:
        cores, notes = float(min(spec.cores or free_cores, free_cores)), []
        if spec.cores and spec.cores > free_cores:
            notes.append(f"asked for {spec.cores} cores, only {free_cores:g} free: using {free_cores:g}")
        if cores <= 0:
            raise ValueError(f"no host cores left for CPU preprocessing (free_cores = {free_cores})")
        librosa_asked = spec.cpu_audio_pipeline == CpuAudioPipeline.LIBROSA
        if spec.ms_per_item:
            cost, basis = spec.ms_per_item / 1e3, "override ms_per_item"
        elif librosa_asked and pipeline == "audio":
            if librosa is None:
                raise ValueError("the 'librosa' CPU audio pipeline needs its fit (engine.analytic.pipeline.librosa_fit)")
            cost, basis = librosa.ms_per_audio_s * size / 1e3, librosa.basis
        else:
            cost, _rows, basis = table.cpu_cost(pipeline, spec.image_megapixels, audio_s)
            if librosa_asked:
                notes.append("cpu_audio_pipeline 'librosa' prices audio only: this image pipeline uses its rows")
        notes.append(f"{pipeline} {size:g} {unit}: {cost * 1e3:.3f} ms per item per core ({basis})")
        notes.append(f"{cores:g} cores -> {cores / cost:,.0f} items/s; scv {scv} (input sizes vary)")
        return StageCost(name=name, service_s=cost, servers=cores, scv=scv, capacity_rps=cores / cost,
                         host_cpu_s=cost, breakdown_s={"cpu": cost}, notes=tuple(notes))
    if device == PreprocessDevice.DPU:
        lat, ii = dpu_cu_times(pipeline, size)
        basis = "override" if spec.dpu_ii_ms or spec.dpu_cu_latency_ms else "defaults (module doc)"
        ii = spec.dpu_ii_ms / 1e3 if spec.dpu_ii_ms else ii
        lat = max(spec.dpu_cu_latency_ms / 1e3 if spec.dpu_cu_latency_ms else lat, ii)
        nbytes, link = dpu_bytes_per_item(pipeline, size), pcie_gbps(pcie_gen) * 1e9
        transfer, cu_cap, link_cap = nbytes / link, spec.units / ii, link / nbytes
        types = " (per CU type: resample+mel, normalise)" if pipeline == "audio" else ""
        notes = (f"{spec.units} CUs{types}, latency {lat * 1e3:.3f} ms, II {ii * 1e3:.3f} ms ({basis}) -> "
                 f"{cu_cap:,.0f} items/s",
                 f"PCIe Gen{pcie_gen} x16 {link / 1e9:g} GB/s: {nbytes / 1e3:,.0f} kB per item (input + output) -> "
                 f"cap {link_cap:,.0f} items/s, {transfer * 1e6:.1f} us per item on the critical path",
                 "bottleneck: " + ("PCIe link" if link_cap < cu_cap else "CUs"),
                 f"host CPU {DPU_HOST_CPU_S * 1e6:g} us per item (driver; assumption)")
        return StageCost(name=name, service_s=ii, fixed_s=lat - ii + transfer, servers=spec.units, scv=scv,
                         capacity_rps=min(cu_cap, link_cap), host_cpu_s=DPU_HOST_CPU_S,
                         breakdown_s={"dpu_cu": lat, "pcie": transfer}, notes=notes)
    return _gpu_stage(name, pipeline, size, scv, table, partitions)


def _partitions(partitions) -> list[DecodePartition]:
    parts = [p if isinstance(p, DecodePartition) else DecodePartition(*p) for p in partitions]
    if not parts:
        raise ValueError("GPU preprocessing needs the GPU partitions (profile or 'full', jpeg, nvdec, sm_share)")
    return parts


def sm_decode_s_per_item(pipeline: str, size: float, table: CostTable, partition: DecodePartition) -> float:
    """Seconds of a partition's own SM time one item's GPU preprocessing takes (0 where a JPEG engine does it).

    Image without a JPEG engine: CUDA (hybrid) nvJPEG decode, ms['cuda'] x (size / 0.372 MP) of full-GPU time
    over the slice's SM share; audio: mel features on the SMs, GPU_MEL_MS_PER_S x seconds of audio over the SM
    share (module doc). This time is the slice's inference time too: the engine charges it to the partition's
    batch service time (engine.analytic.design.with_sm_decode), not to a decode stage of its own.
    """
    if pipeline == "image":
        if partition.jpeg > 0:
            return 0.0
        ms, _ = table.nvjpeg()
        return ms["cuda"] * (size / NVJPEG_REF_MP) / 1e3 / partition.sm_share
    if pipeline == "audio":
        return GPU_MEL_MS_PER_S * size / 1e3 / partition.sm_share
    return 0.0


def sm_decode_charges(spec: PreprocessingSpec, model_row, points: "list[dict] | pd.DataFrame | CostTable",
                      partitions: Sequence, audio_s: Optional[float] = None) -> dict[str, float]:
    """{partition name: SM seconds per item} for GPU preprocessing that runs on the partitions' own SMs."""
    pipeline = str(_get(model_row, "preprocess", "none"))
    if PreprocessDevice(spec.device) != PreprocessDevice.GPU or pipeline not in ("image", "audio"):
        return {}
    table = points if isinstance(points, CostTable) else CostTable(points)
    size = spec.image_megapixels if pipeline == "image" else (AUDIO_DEFAULT_S if audio_s is None else audio_s)
    charges = {p.name: sm_decode_s_per_item(pipeline, size, table, p) for p in _partitions(partitions)}
    return {k: v for k, v in charges.items() if v > 0}


def _gpu_stage(name, pipeline, size, scv, table: CostTable, partitions) -> StageCost:
    """GPU decode: hardware JPEG engines where the profile has them. Decode on a slice's own SMs (CUDA decode
    without a JPEG engine, audio features) is no stage of its own: it is charged to the slice's inference time
    (sm_decode_s_per_item), so a slice is never booked for decode and inference beyond 100 %."""
    parts = _partitions(partitions)
    rates, lats, host, notes, on_sms = [], [], [], [], []
    if pipeline == "image":
        (ms, used), k, cpu_dec = table.nvjpeg(), size / NVJPEG_REF_MP, table.cpu_decode(size)
        for p in parts:
            if p.jpeg > 0:
                per = ms["hw_batched"] * k / 1e3
                rate, lat = p.jpeg / per, ms["single"] * k / 1e3
                rates.append(rate), lats.append(lat), host.append(GPU_HOST_FRACTION["hw"] * cpu_dec)
                notes.append(f"{p.name}: JPEG engine x{p.jpeg} per image -> {rate:,.0f} img/s")
            else:
                per = sm_decode_s_per_item(pipeline, size, table, p)
                on_sms.append(p), host.append(GPU_HOST_FRACTION["cuda"] * cpu_dec)
                notes.append(f"{p.name}: CUDA decode, {per * 1e3:.2f} ms of its SMs per image, charged to its "
                             "inference time")
        notes.append("nvJPEG figures: " + ("; ".join(used) or "module defaults"))
    else:
        cpu_cost = table.cpu_cost("audio", audio_s=size).seconds
        for p in parts:
            per = sm_decode_s_per_item(pipeline, size, table, p)
            on_sms.append(p), host.append(GPU_AUDIO_HOST_FRACTION * cpu_cost)
            notes.append(f"{p.name}: mel on the SMs, {per * 1e3:.3f} ms per item, charged to its inference time")
    host_s = float(np.mean(host))
    if not rates:  # every partition decodes on its own SMs: only the host's share of the work is left here
        notes.append(f"host CPU {host_s * 1e3:.3f} ms per item (GPU_HOST_FRACTION, assumption after DALI #5274)")
        return StageCost(name=name, service_s=0.0, scv=scv, capacity_rps=math.inf, host_cpu_s=host_s,
                         breakdown_s={"gpu_decode": 0.0}, notes=tuple(notes))
    if on_sms:  # engines serve the requests of the partitions that have them (requests spread evenly: assumption)
        rates = [r * len(parts) / len(rates) for r in rates]
        notes.append(f"{len(on_sms)} of {len(parts)} partitions decode on their own SMs; the JPEG engines serve "
                     "the other partitions' share of the requests (spread evenly, assumption)")
    total = float(sum(rates))
    service, share = len(rates) / total, [r / total for r in rates]  # servers / service = total capacity
    latency = float(np.dot(share, lats))
    notes.append(f"{len(rates)} partitions decode {total:,.0f} items/s in all; host CPU {host_s * 1e3:.3f} ms "
                 "per item (GPU_HOST_FRACTION, assumption after DALI #5274)")
    if len(set(round(r) for r in rates)) > 1:
        notes.append("pooled capacity assumes a slice may decode for the others (via a host copy); "
                     "a slice alone is limited by its own decode rate above")
    fixed = max(0.0, latency - service)  # a single image takes longer than the batched interval
    return StageCost(name=name, service_s=service, fixed_s=fixed, servers=len(rates), scv=scv,
                     capacity_rps=total, host_cpu_s=host_s, breakdown_s={"gpu_decode": service + fixed},
                     notes=tuple(notes))
