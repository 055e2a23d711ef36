"""Model profiler: latency and throughput of a model over a batch sweep, as `measured` rows.

For each batch: `warmup` untimed runs (graph optimisation, allocator and cache warm-up), then
`reps` timed runs; each rep is one synchronous inference, input already in host memory
(onnxruntime) or on the device (PyTorch). Reported: mean and p50/p90/p95/p99 latency in ms
per batch, and throughput = batch / mean in items per second. With few reps the high
percentiles approach the maximum (p99 of 50 reps is between the two slowest).

Backends: onnxruntime with the CUDA execution provider where it loads (partition from
CUDA_VISIBLE_DEVICES, see engine.profilers.gpu), else the CPU provider (sku 'CPU', partition
'full', the CPU model in measured_on); or a torchvision model with random weights timed in
eager PyTorch, where torch and torchvision are installed.
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from engine.profilers import ProfilerError, host
from engine.seed.records import LatencyPointRow
from engine.profilers.gpu import cuda_target

SOURCE = "python -m engine profile model (this project)"
DEFAULT_BATCHES = (1, 2, 4, 8, 16, 32)
#: torchvision builder name -> the store's model name (data/seed/models.csv)
TORCHVISION = {"mobilenet_v3_small": "mobilenetv3-small", "squeezenet1_1": "squeezenet1.1", "swin_t": "swin-t",
               "resnet50": "resnet50", "shufflenet_v2_x1_0": "shufflenet-v2", "efficientnet_b0": "efficientnet-b0",
               "resnet18": "resnet18", "alexnet": "alexnet", "vgg19": "vgg19", "resnext50_32x4d": "resnext50"}
_ORT_TYPES = {"tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8, "tensor(bool)": np.bool_}
_PRECISION = {"tensor(float)": "fp32", "tensor(float16)": "fp16", "tensor(bfloat16)": "bf16"}

Progress = Optional[Callable[[str], None]]


def _say(progress: Progress, msg: str) -> None:
    (progress or (lambda m: print(m, file=sys.stderr)))(msg)


def latency_stats(ms: Sequence[float], batch: int) -> dict:
    """Mean and percentiles (ms) of one batch's timed reps, and throughput (items/s)."""
    a = np.asarray(ms, dtype=float)
    p50, p90, p95, p99 = np.percentile(a, [50, 90, 95, 99])
    mean = float(a.mean())
    return {"mean_ms": mean, "p50_ms": float(p50), "p90_ms": float(p90), "p95_ms": float(p95),
            "p99_ms": float(p99), "throughput": batch * 1000.0 / mean}


def sweep(make_run: Callable[[int], Callable[[], None]], batches: Sequence[int], warmup: int, reps: int,
          progress: Progress = None, label: str = "") -> list[dict]:
    """Time make_run(b)() for each batch b: warm-up, then `reps` timed calls; one stats dict per batch."""
    if not batches:
        raise ProfilerError("no batch sizes to time (--batches 1,2,4,...)")
    if reps < 1 or warmup < 0:
        raise ProfilerError(f"reps must be >= 1 and warmup >= 0 (got reps={reps}, warmup={warmup})")
    out = []
    for b in batches:
        run = make_run(b)
        for _ in range(warmup):
            run()
        ms = []
        for _ in range(reps):
            t0 = time.perf_counter_ns()
            run()
            ms.append((time.perf_counter_ns() - t0) / 1e6)
        s = {"batch": b, **latency_stats(ms, b)}
        _say(progress, f"profile model {label}: batch {b}: mean {s['mean_ms']:.3f} ms, p99 {s['p99_ms']:.3f} ms, "
                       f"{s['throughput']:.1f} items/s")
        out.append(s)
    return out


def _rows(stats: list[dict], common: dict) -> list:
    return [LatencyPointRow(**common, **{k: (round(v, 6) if isinstance(v, float) else v) for k, v in s.items()})
            for s in stats]


def _target(cuda: bool) -> tuple[str, str, dict, str]:
    """(sku, partition, measured_on extras, note) for the device the run used."""
    if not cuda:
        return "CPU", "full", {}, ""

    t = cuda_target()
    return t.sku, t.partition, ({"gpu": t.gpu_name.replace(" ", "_")} if t.gpu_name else {}), t.how


# --------------------------------------------------------------------------- onnxruntime

def open_onnx(path: Path, device: str = "auto", threads: Optional[int] = None):
    """An onnxruntime session on CUDA (device 'cuda', or 'auto' where the provider loads) or the CPU."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise ProfilerError("--onnx needs onnxruntime: pip install onnxruntime==1.31.1 "
                            "(onnxruntime-gpu on CUDA machines)") from None
    path = Path(path)
    if not path.is_file():
        raise ProfilerError(f"{path}: no such ONNX file")
    has_cuda = "CUDAExecutionProvider" in ort.get_available_providers()
    if device == "cuda" and not has_cuda:
        raise ProfilerError("this onnxruntime has no CUDAExecutionProvider (install onnxruntime-gpu)")
    providers = (["CUDAExecutionProvider"] if has_cuda and device != "cpu" else []) + ["CPUExecutionProvider"]
    so = ort.SessionOptions()
    so.log_severity_level = 3  # errors only: a missing CUDA library is reported by our own check below
    if threads:
        so.intra_op_num_threads = threads
    try:
        sess = ort.InferenceSession(str(path), sess_options=so, providers=providers)
    except Exception as e:  # onnxruntime raises its own pybind exception types
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ProfilerError(f"{path}: not a loadable ONNX model ({first[:200]})") from None
    if device == "cuda" and sess.get_providers()[0] != "CUDAExecutionProvider":
        raise ProfilerError("the CUDA execution provider did not load (CUDA/cuDNN libraries missing?)")
    return sess


def fixed_batch(sess) -> Optional[int]:
    """The batch the model accepts if its first input's first dimension is fixed, else None."""
    shape = sess.get_inputs()[0].shape
    return shape[0] if shape and isinstance(shape[0], int) else None


def precision(sess) -> str:
    """fp32/fp16/bf16 from the first floating-point input (else output); fp32 if there is none."""
    for arg in list(sess.get_inputs()) + list(sess.get_outputs()):
        if arg.type in _PRECISION:
            return _PRECISION[arg.type]
        if arg.type == "tensor(double)":
            raise ProfilerError(f"{arg.name!r} is float64; precisions are fp32, fp16, bf16, int8")
    return "fp32"


def feed(sess, batch: int, seed: int = 0) -> dict:
    """Random inputs for `batch` items (normal floats; 0/1 integers, valid as token ids and masks)."""
    rng = np.random.default_rng(seed)
    out = {}
    for arg in sess.get_inputs():
        if arg.type not in _ORT_TYPES:
            raise ProfilerError(f"input {arg.name!r} has type {arg.type}, which the profiler cannot generate")
        shape = []
        for axis, d in enumerate(arg.shape):
            if isinstance(d, int) and d > 0:
                shape.append(d)
            elif axis == 0:
                shape.append(batch)
            else:
                raise ProfilerError(f"input {arg.name!r} has a dynamic dimension {d!r} at axis {axis} besides the "
                                    "batch; export the model with fixed non-batch dimensions")
        dtype = _ORT_TYPES[arg.type]
        out[arg.name] = (rng.standard_normal(shape).astype(dtype) if np.issubdtype(dtype, np.floating)
                         else rng.integers(0, 2, size=shape).astype(dtype))
    return out


def profile_onnx(path, model: str, batches: Sequence[int] = DEFAULT_BATCHES, warmup: int = 10, reps: int = 50,
                 device: str = "auto", threads: Optional[int] = None, progress: Progress = None) -> list:
    """Batch sweep of an ONNX model; LatencyPointRow rows (kind measured) for the batches it accepts."""
    sess = open_onnx(Path(path), device, threads)
    cuda = sess.get_providers()[0] == "CUDAExecutionProvider"
    fixed = fixed_batch(sess)
    if fixed is not None:
        if fixed not in batches:
            raise ProfilerError(f"{Path(path).name} has a fixed batch of {fixed}; none of the batches "
                                f"{','.join(map(str, batches))} fit (use --batches {fixed})")
        _say(progress, f"profile model: {Path(path).name} has a fixed batch of {fixed}; other batches skipped")
        batches = [fixed]
    prec = precision(sess)
    out_names = None  # all outputs: a server returns them

    def make_run(b):
        inputs = feed(sess, b)
        return lambda: sess.run(out_names, inputs)

    stats = sweep(make_run, batches, warmup, reps, progress, Path(path).name)
    sku, partition, extra, how = _target(cuda)
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    where = "CUDA EP, host inputs (copies included)" if cuda else f"CPU EP, intra-op threads {threads or 'default'}"
    note = f"{Path(path).name} sha256:{digest}; {where}; warmup {warmup}, reps {reps}" + (f"; {how}" if how else "")
    common = {"model": model, "sku": sku, "partition": partition, "precision": prec,
              "framework": "onnxruntime-cuda" if cuda else "onnxruntime-cpu", "kind": "measured",
              "measured_on": host.measured_on(["onnxruntime", "onnxruntime-gpu", "numpy"], extra),
              "source": SOURCE, "note": note}
    return _rows(stats, common)


# --------------------------------------------------------------------------- torchvision

def torchvision_name(name: str) -> str:
    """The torchvision builder for a builder or store model name; ProfilerError lists the valid ones."""
    if name in TORCHVISION:
        return name
    for builder, store_name in TORCHVISION.items():
        if name == store_name:
            return builder
    raise ProfilerError(f"{name!r} is not a known torchvision model; valid: {', '.join(TORCHVISION)} "
                        f"(or {', '.join(TORCHVISION.values())})")


def profile_torchvision(name: str, model: Optional[str] = None, batches: Sequence[int] = DEFAULT_BATCHES,
                        warmup: int = 10, reps: int = 50, device: str = "auto", threads: Optional[int] = None,
                        progress: Progress = None) -> list:
    """Batch sweep of a torchvision model (random weights: timing does not depend on them) in eager PyTorch,
    fp32, input 3x224x224 already on the device; CUDA where torch sees a GPU, else the CPU."""
    builder = torchvision_name(name)
    try:
        import torch
        import torchvision
    except ImportError as e:
        raise ProfilerError(f"--torchvision needs torch and torchvision ({e.name or 'torch'} is not installed "
                            "here); install both, or export the model to ONNX and use --onnx FILE") from None
    cuda = device != "cpu" and torch.cuda.is_available()
    if device == "cuda" and not cuda:
        raise ProfilerError("torch sees no CUDA device (check CUDA_VISIBLE_DEVICES and the torch build)")
    if threads:
        torch.set_num_threads(threads)
    dev = torch.device("cuda" if cuda else "cpu")
    net = getattr(torchvision.models, builder)(weights=None).eval().to(dev)

    def make_run(b):
        x = torch.randn(b, 3, 224, 224, device=dev)

        def run():
            with torch.inference_mode():
                net(x)
            if cuda:
                torch.cuda.synchronize()
        return run

    stats = sweep(make_run, batches, warmup, reps, progress, builder)
    sku, partition, extra, how = _target(cuda)
    where = "CUDA, input on the device" if cuda else f"CPU, torch threads {torch.get_num_threads()}"
    note = (f"torchvision.models.{builder}(weights=None), eager, inference_mode; {where}; warmup {warmup}, "
            f"reps {reps}" + (f"; {how}" if how else ""))
    common = {"model": model or TORCHVISION[builder], "sku": sku, "partition": partition, "precision": "fp32",
              "framework": "pytorch-cuda" if cuda else "pytorch-cpu", "kind": "measured",
              "measured_on": host.measured_on(["torch", "torchvision", "numpy"], extra), "source": SOURCE,
              "note": note}
    return _rows(stats, common)
