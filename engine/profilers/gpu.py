"""Which GPU (and MIG slice) a CUDA run lands on: catalogue SKU and partition for measured rows.

CUDA numbers its visible devices from CUDA_VISIBLE_DEVICES; its first entry is device 0,
the one the profilers use. The entry is an index, a GPU UUID (or unique prefix) or a MIG
UUID; `nvidia-smi -L` lists every GPU with its MIG devices and their profiles, e.g.

    GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-5d5ba0d6-...)
      MIG 3g.20gb     Device  0: (UUID: MIG-c6d4f1ef-...)

so a MIG UUID maps to a profile such as `3g.20gb` (the row's partition) and the GPU's name
maps to a catalogue SKU where that is unambiguous (`A100-SXM4-40GB`); otherwise the name is
kept as nvidia-smi wrote it and the partition is 'full'.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from typing import Mapping, Optional

_GPU_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)")
_MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)")

#: (pattern on the lower-case nvidia-smi name, catalogue SKU); first match wins
_SKU_RULES = (
    (r"a100-sxm4-40gb", "A100-SXM4-40GB"),
    (r"a100-sxm4-80gb", "A100-SXM4-80GB"),
    (r"\ba30\b", "A30-24GB"),
    (r"h100 nvl", "H100-NVL-94GB"),
    (r"h100 pcie", "H100-PCIe-80GB"),
    (r"h100 80gb hbm3|h100-sxm5?-80gb", "H100-SXM5-80GB"),
    (r"\bh200\b(?!.*nvl)", "H200-141GB"),
    (r"v100.*16gb", "V100-16GB"),
    (r"v100.*32gb", "V100-32GB"),
    (r"\bt4\b", "T4-16GB"),
)


@dataclass(frozen=True)
class SmiGpu:
    index: int
    name: str
    uuid: str
    migs: tuple[tuple[str, str], ...] = field(default=())  # (profile, MIG uuid) in device order


@dataclass(frozen=True)
class CudaTarget:
    sku: str  # catalogue SKU, or the nvidia-smi name where none fits
    partition: str  # 'full' or a MIG profile such as '1g.10gb'
    gpu_name: str  # as nvidia-smi names it ('' if unknown)
    how: str  # one line: how sku and partition were found


def parse_smi_list(text: str) -> list[SmiGpu]:
    """Parse `nvidia-smi -L` output into GPUs with their MIG devices (unparseable lines are skipped)."""
    gpus: list[SmiGpu] = []
    for line in text.splitlines():
        if m := _GPU_LINE.match(line):
            gpus.append(SmiGpu(int(m[1]), m[2].strip(), m[3].strip()))
        elif (m := _MIG_LINE.match(line)) and gpus:
            g = gpus[-1]
            gpus[-1] = SmiGpu(g.index, g.name, g.uuid, g.migs + ((m[1], m[3].strip()),))
    return gpus


def catalogue_sku(name: str) -> str:
    """Catalogue SKU for an nvidia-smi GPU name ('NVIDIA H100 80GB HBM3' -> 'H100-SXM5-80GB').

    Names with no unambiguous match are returned without the vendor prefix, spaces as '-'.
    """
    low = name.lower()
    for pattern, sku in _SKU_RULES:
        if re.search(pattern, low):
            return sku
    return re.sub(r"^(nvidia|tesla)\s+", "", name.strip(), flags=re.I).replace(" ", "-") or "unknown-GPU"


def cuda_target(env: Optional[Mapping[str, str]] = None, smi_text: Optional[str] = None) -> CudaTarget:
    """SKU and partition of CUDA device 0 under CUDA_VISIBLE_DEVICES (`smi_text`: `nvidia-smi -L`)."""
    env = os.environ if env is None else env
    first = env.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    smi_text = smi_list() if smi_text is None else smi_text
    gpus = parse_smi_list(smi_text or "")
    if not gpus:
        return CudaTarget("unknown-GPU", "full", "", "nvidia-smi -L gave no GPU list")
    if first.startswith("MIG-"):
        for g in gpus:
            for profile, uuid in g.migs:
                if uuid == first or uuid.startswith(first):
                    return CudaTarget(catalogue_sku(g.name), profile, g.name,
                                      f"CUDA_VISIBLE_DEVICES={first} is MIG {profile} on GPU {g.index}")
        return CudaTarget(catalogue_sku(gpus[0].name), "full", gpus[0].name,
                          f"MIG device {first} not in nvidia-smi -L; partition unknown, recorded as full")
    gpu = None
    if first.isdigit():
        gpu = next((g for g in gpus if g.index == int(first)), None)
    elif first.startswith("GPU-"):
        gpu = next((g for g in gpus if g.uuid.startswith(first)), None)
    elif not first:
        gpu = gpus[0]
    if gpu is None:
        return CudaTarget(catalogue_sku(gpus[0].name), "full", gpus[0].name,
                          f"CUDA_VISIBLE_DEVICES={first} not matched in nvidia-smi -L; assumed GPU 0, full")
    if gpu.migs:  # MIG mode on: CUDA device 0 is the GPU's first MIG device
        return CudaTarget(catalogue_sku(gpu.name), gpu.migs[0][0], gpu.name,
                          f"GPU {gpu.index} is in MIG mode; CUDA device 0 is its first MIG device")
    return CudaTarget(catalogue_sku(gpu.name), "full", gpu.name, f"GPU {gpu.index}, MIG off")


def smi_list() -> Optional[str]:
    """`nvidia-smi -L` output, or None where nvidia-smi is missing or fails (10 s limit)."""
    try:
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return r.stdout if r.returncode == 0 else None
