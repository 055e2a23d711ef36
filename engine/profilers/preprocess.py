"""Preprocessing profiler: time the image and audio pipelines (engine.profilers.pipelines) on one core.

Image points: real photographs (scikit-image's offline samples) re-encoded as JPEG quality 90
at ImageNet-like sizes; each point gives two rows, `jpeg_decode` alone and the whole
`decode+resize256+crop224+normalise`. Audio points: a speech-like 44.1 kHz clip of 2.5 to 25 s
through `resample16k+stft+mel80+normalise`.

Timing runs in a child process pinned to one CPU with BLAS/OpenMP threads set to 1 before
numpy is imported, so `ms_per_item` is the cost on one core: a pool of k cores serves about
k * 1000 / ms_per_item items per second. `ms_per_item` is the typical cost: the median time of
each input (photo or clip), averaged over the inputs, which keeps interference from other
processes on a shared host out while every photo's content counts equally; the note gives the
plain mean and p90 as well. `input_size` is source megapixels (image) or seconds (audio).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from engine.order_stats import median
from engine.profilers import ProfilerError, host
from engine.profilers.pipelines import (decode_jpeg, encode_jpeg, load_photos, preprocess_audio, synth_speech,
                                        transform_image)
from engine.seed.records import PreprocessingPointRow

SOURCE = "python -m engine profile preprocess (this project)"
IMAGE_STEP = "decode+resize256+crop224+normalise"
AUDIO_STEP = "resample16k+stft+mel80+normalise"
IMAGE_SIZES = {"quick": ((500, 375), (640, 480), (1024, 768)),
               "full": ((500, 375), (640, 480), (1024, 768), (1600, 1200))}
AUDIO_SECONDS = {"quick": (2.5, 10.0, 25.0), "full": (2.5, 5.0, 10.0, 15.0, 20.0, 25.0)}
#: (seconds of timing per point, minimum items per point)
BUDGET = {"quick": (0.6, 8), "full": (3.0, 30)}
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


# --------------------------------------------------------------------------- timing

def _time_loop(step: Callable[[int], tuple[float, ...]], budget_s: float, min_n: int, warmup: int = 2):
    """Call step(i) (which returns its own split times in ms) until budget and min_n are reached."""
    for i in range(warmup):
        step(i)
    out, start, i = [], time.perf_counter(), 0
    while i < min_n or time.perf_counter() - start < budget_s:
        out.append(step(i))
        i += 1
    return np.array(out)


def _stats(ms: np.ndarray, inputs: int = 1) -> dict:
    """Typical ms per item (mean over the `inputs` cycled inputs of each one's median), mean, p90, count."""
    typical = float(np.mean([median(ms[g::inputs]) for g in range(inputs)]))
    return {"typical": typical, "mean": float(ms.mean()), "p90": float(np.percentile(ms, 90)), "n": int(ms.size)}


def _pin_one_core() -> str:
    try:
        core = max(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {core})
        return f"pinned to CPU {core}"
    except (AttributeError, OSError):
        return "not pinned (no sched_setaffinity)"


def measure(quick: bool = False) -> list[dict]:
    """Time every point in this process (one core); returns PreprocessingPointRow field dicts."""
    from PIL import features


    mode = "quick" if quick else "full"
    budget, min_n = BUDGET[mode]
    on = host.measured_on(["pillow", "numpy", "scipy"])  # before pinning, so cores= counts the host's
    pinned = _pin_one_core()
    threads = ",".join(sorted({os.environ.get(v, "unset") for v in _THREAD_VARS}))
    pil, npv, spv = host.version("pillow"), np.__version__, host.version("scipy")
    common = {"device": "cpu", "kind": "measured", "measured_on": on, "source": SOURCE}
    timing = f"1 core ({pinned}, BLAS/OpenMP threads={threads})"
    photos = load_photos()
    names = ", ".join(n for n, _ in photos)
    rows = []
    for w, h in IMAGE_SIZES[mode]:
        jpegs = [encode_jpeg(p, (w, h)) for _, p in photos]

        def step(i):
            t0 = time.perf_counter_ns()
            im = decode_jpeg(jpegs[i % len(jpegs)])
            t1 = time.perf_counter_ns()
            transform_image(im)
            return (t1 - t0) / 1e6, (time.perf_counter_ns() - t0) / 1e6

        ms = _time_loop(step, budget, max(min_n, len(jpegs)))
        desc = f"JPEG q90 {w}x{h} re-encoded from scikit-image photos ({names})"
        jpg = f"Pillow {pil} ({_libjpeg(features)})"
        for col, name, impl in ((0, "jpeg_decode", jpg),
                                (1, IMAGE_STEP, f"{jpg} decode + bilinear resize + crop; numpy {npv} normalise")):
            s = _stats(ms[:, col], len(jpegs))
            rows.append({**common, "pipeline": "image", "step": name, "implementation": impl, "input_desc": desc,
                         "input_size": round(w * h / 1e6, 6), "ms_per_item": round(s["typical"], 4),
                         "note": f"{timing}; {s['n']} timed images, {len(jpegs)} photos; per-photo median "
                                 f"averaged; mean {s['mean']:.3f} ms, p90 {s['p90']:.3f} ms; output float32 3x224x224"})
        print(f"profile preprocess: image {w}x{h}: {rows[-1]['ms_per_item']:.2f} ms/image "
              f"(decode {rows[-2]['ms_per_item']:.2f})", file=sys.stderr)
    for seconds in AUDIO_SECONDS[mode]:
        clip = synth_speech(seconds)
        ms = _time_loop(lambda i: (_timed(preprocess_audio, clip),), budget, min_n)
        s = _stats(ms[:, 0])
        rows.append({**common, "pipeline": "audio", "step": AUDIO_STEP,
                     "implementation": f"scipy {spv} resample_poly + scipy.fft rfft (n_fft 512, 25 ms Hann, 10 ms "
                                       f"hop); numpy {npv} 80-band mel, log, per-band normalisation",
                     "input_desc": f"synthetic speech-like mono float32 at 44.1 kHz, {seconds:g} s",
                     "input_size": seconds, "ms_per_item": round(s["typical"], 4),
                     "note": f"{timing}; {s['n']} timed clips, median; mean {s['mean']:.3f} ms, p90 {s['p90']:.3f} "
                             f"ms; {s['typical'] / seconds:.3f} ms per audio second; synthetic signal"})
        print(f"profile preprocess: audio {seconds:g} s: {s['typical']:.2f} ms/clip", file=sys.stderr)
    return rows


def _libjpeg(features) -> str:
    """'libjpeg-turbo 3.2.0' (or 'libjpeg 9.0'): the JPEG codec Pillow decodes with."""
    if features.check_feature("libjpeg_turbo"):
        return f"libjpeg-turbo {features.version_feature('libjpeg_turbo')}"
    return f"libjpeg {features.version('jpg')}"


def _timed(fn, *args) -> float:
    t0 = time.perf_counter_ns()
    fn(*args)
    return (time.perf_counter_ns() - t0) / 1e6


def profile_preprocess(quick: bool = False, in_process: bool = False, timeout_s: float = 900) -> list:
    """Run the preprocessing profiler; returns validated PreprocessingPointRow rows.

    By default the timing runs in a fresh child process (single-threaded BLAS, one pinned core),
    since thread settings only take effect before numpy loads; `in_process=True` times here
    (for debugging: with multi-threaded BLAS pinned to one core the audio numbers come out worse).
    Progress goes to stderr.
    """
    if in_process:
        before = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
        try:
            dicts = measure(quick)
        finally:
            if before is not None:
                os.sched_setaffinity(0, before)  # measure() pinned this process to one core
    else:
        env = {**os.environ, **{v: "1" for v in _THREAD_VARS}}
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        cmd = [sys.executable, "-m", "engine.profilers.preprocess"] + (["--quick"] if quick else [])
        try:
            r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise ProfilerError(f"the preprocessing profiler took over {timeout_s:.0f} s and was stopped") from None
        try:
            out = json.loads(r.stdout or "{}")
        except ValueError:
            out = {}
        if r.returncode != 0 or "rows" not in out:
            raise ProfilerError(out.get("error") or f"the preprocessing worker failed (exit {r.returncode}); "
                                "see the messages above")
        dicts = out["rows"]
    return [PreprocessingPointRow(**d) for d in dicts]


def _worker() -> int:
    """Child-process entry: measure and print {"rows": [...]} or {"error": "..."} as JSON on stdout."""
    try:
        print(json.dumps({"rows": measure("--quick" in sys.argv[1:])}))
        return 0
    except ProfilerError as e:
        print(json.dumps({"error": str(e)}))
        return 3


if __name__ == "__main__":
    raise SystemExit(_worker())
