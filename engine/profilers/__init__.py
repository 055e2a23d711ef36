"""Real profilers: time preprocessing and models on this machine, as `measured` rows.

- `engine.profilers.host`: facts about the machine the numbers were taken on.
- `engine.profilers.preprocess`: image and audio preprocessing pipelines and their timing
  driver (PreprocessingPointRow rows, ms per item on one core).
- `engine.profilers.model`: onnxruntime (and torch/torchvision) batch sweeps
  (LatencyPointRow rows).

Every user-facing failure (a missing package, a bad file, an unknown name) raises
ProfilerError, whose message is one line fit for the CLI's `error: ...`.
"""

from __future__ import annotations
from engine.errors import KneepointError


class ProfilerError(KneepointError):
    """A profiler cannot run; the message says why and what to do, in one line."""


__all__ = ["ProfilerError"]
