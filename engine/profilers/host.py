"""Facts about the host a measurement was taken on: CPU model, cores, library versions, date.

They go into the `measured_on` column of every measured row, so a number can be traced to
the machine and the library versions that produced it (DESIGN.md section 4: provenance on
every row). Nothing here imports the libraries it reports: versions come from the installed
distributions' metadata.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Iterable, Optional

#: distribution names as pip knows them -> the short label used in measured_on
_LABELS = {"pillow": "pillow", "numpy": "numpy", "scipy": "scipy", "onnxruntime": "onnxruntime",
           "onnxruntime-gpu": "onnxruntime-gpu", "torch": "torch", "torchvision": "torchvision"}


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's marketing name ('AMD EPYC 7B13'), from /proc/cpuinfo, else platform, else 'unknown CPU'."""
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def cores() -> tuple[int, int]:
    """(logical CPUs this process may run on, logical CPUs of the machine)."""
    total = os.cpu_count() or 1
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = total
    return usable, total


def version(dist: str) -> Optional[str]:
    """Installed version of a distribution, or None if it is not installed."""
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def versions(dists: Iterable[str]) -> str:
    """'pillow=13.0.0 numpy=2.4.6' for the installed ones among `dists` (missing ones are left out)."""
    parts = []
    for d in dists:
        v = version(d)
        if v is not None:
            parts.append(f"{_LABELS.get(d, d)}={v}")
    return " ".join(parts)


def today() -> str:
    """Local date, ISO 8601 (YYYY-MM-DD)."""
    return _dt.date.today().isoformat()


def measured_on(dists: Iterable[str], extra: Optional[dict[str, str]] = None) -> str:
    """The measured_on string: '2026-11-22 host=AMD EPYC 7B13 cores=2 pillow=13.0.0 numpy=2.4.6 ...'.

    `extra` adds key=value facts (e.g. gpu=...); values have their spaces kept, keys first.
    """
    usable, _total = cores()
    parts = [today(), f"host={cpu_model()}", f"cores={usable}"]
    parts += [f"{k}={v}" for k, v in (extra or {}).items()]
    libs = versions(dists)
    if libs:
        parts.append(libs)
    return " ".join(parts)
