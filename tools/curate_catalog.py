"""Curate the hardware catalogue seed tables from ../shared/data/seed_sources.

Writes data/seed/gpus.csv, mig_profiles.csv and mig_placements.csv in the
project's schema (engine/seed/records.py), one source per row. Re-runnable.

    python tools/curate_catalog.py [--sources DIR]
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.seed.records import GpuRow, MigPlacementRow, MigProfileRow  # noqa: E402

SEED = ROOT / "data" / "seed"
DEFAULT_SOURCES = ROOT.parent / "shared" / "data" / "seed_sources"

# Source-file product / family names -> the project's SKU names.
PRODUCT_SKU = {
    "A100-SXM4-40GB": "A100-SXM4-40GB",
    "A100-SXM4-80GB": "A100-SXM4-80GB",
    "H100-SXM5-80GB": "H100-SXM5-80GB",
    "H100-PCIe-80GB": "H100-PCIe-80GB",
    "H100-NVL-94GB": "H100-NVL-94GB",
    "H200-141GB": "H200-141GB",
    "A30-24GB": "A30-24GB",
}
FAMILY_SKU = {
    "A100-40GB": "A100-SXM4-40GB",
    "A100-80GB": "A100-SXM4-80GB",
    "H100-80GB-SXM5": "H100-SXM5-80GB",
    "H100-80GB-PCIe": "H100-PCIe-80GB",
    "H100-NVL-94GB": "H100-NVL-94GB",
    "H200-141GB": "H200-141GB",
    "A30-24GB": "A30-24GB",
}

MIG_GUIDE = "NVIDIA MIG User Guide v580, supported profiles + nvidia-smi mig -lgip"
TDP_SRC = "seed_sources/prices_power.csv: "
# GPU facts not in the MIG tables: (memory_gb, tdp_w, pcie_gen, tdp source, note).
GPU_FACTS = {
    "A100-SXM4-40GB": (40, 400, 4, TDP_SRC + "A100 SXM4 40/80GB TDP (thundercompute A100 spec table)", ""),
    "A100-SXM4-80GB": (80, 400, 4, TDP_SRC + "A100 SXM4 40/80GB TDP (thundercompute A100 spec table)", ""),
    "H100-SXM5-80GB": (80, 700, 5, TDP_SRC + "H100 SXM 80GB TDP (pricegpu hardware specs)", ""),
    "H100-PCIe-80GB": (80, 350, 5, TDP_SRC + "H100 PCIe 80GB TDP (technical.city; nvidia-smi cap 350 W)", ""),
    "H100-NVL-94GB": (94, 400, 5, TDP_SRC + "H100 NVL 94GB power cap (nvidia-smi, AlizeeChen11/mig-and-mps)", ""),
    "H200-141GB": (141, 700, 5, TDP_SRC + "H200 SXM 141GB TDP (hubacek knowledge base)", "MIG placements assumed equal to H100"),
    "A30-24GB": (24, 165, 4, "NVIDIA A30 Tensor Core GPU datasheet (max TDP 165 W, PCIe Gen4)", "TDP not in seed_sources; datasheet value"),
}
NON_MIG = [
    # sku, sm_count, memory_gb, tdp_w, pcie_gen, source, note
    GpuRow(sku="V100-16GB", mig_capable=False, sm_count=80, memory_gb=16, memory_slots=0, compute_slices=0,
           tdp_w=300, pcie_gen=3,
           source="NVIDIA Tesla V100 launch table (80 SMs, 300 W SXM2), techrival.com Volta V100 article",
           note="SXM2 (DGX-1) variant, as in the DeepLearningExamples tables; PCIe card is 250 W"),
    GpuRow(sku="V100-32GB", mig_capable=False, sm_count=80, memory_gb=32, memory_slots=0, compute_slices=0,
           tdp_w=300, pcie_gen=3,
           source="NVIDIA Tesla V100 launch table (80 SMs, 300 W SXM2), techrival.com Volta V100 article",
           note="SXM2 (DGX-1/DGX-2) variant"),
    GpuRow(sku="T4-16GB", mig_capable=False, sm_count=40, memory_gb=16, memory_slots=0, compute_slices=0,
           tdp_w=70, pcie_gen=3,
           source=TDP_SRC + "T4 TDP 70 W (technical.city); 40 SMs = 2560 CUDA cores / 64 per Turing SM",
           note="SM count derived from the CUDA core count"),
]


def _int_prefix(text: str) -> int:
    m = re.match(r"\s*(\d+)", text)
    if not m:
        raise ValueError(f"no leading integer in {text!r}")
    return int(m.group(1))


def _sku_of_product(product: str) -> str:
    for key, sku in PRODUCT_SKU.items():
        if product.startswith(key):
            return sku
    raise KeyError(product)


def curate(sources: Path) -> dict[str, list]:
    with open(sources / "mig_profiles.csv", newline="") as f:
        prof_src = list(csv.DictReader(f))
    with open(sources / "mig_placements.csv", newline="") as f:
        place_src = list(csv.DictReader(f))

    profiles: list[MigProfileRow] = []
    by_sku: dict[str, list[dict]] = {}
    for r in prof_src:
        by_sku.setdefault(_sku_of_product(r["gpu_product"]), []).append(r)

    gpus: list[GpuRow] = []
    for sku, rows in by_sku.items():
        mem_gb, tdp, pcie, tdp_src, gnote = GPU_FACTS[sku]
        full = max(rows, key=lambda r: int(r["compute_slices"]))
        gpus.append(GpuRow(
            sku=sku, mig_capable=True, sm_count=int(full["full_gpu_sms_non_mig"]), memory_gb=mem_gb,
            memory_slots=int(full["memory_slices"]), compute_slices=int(full["compute_slices"]),
            tdp_w=tdp, pcie_gen=pcie, source=f"{MIG_GUIDE}; TDP: {tdp_src}", note=gnote))
        gib_by_slices = {}
        for r in rows:
            try:
                gib_by_slices.setdefault(int(r["memory_slices"]), float(r["memory_gib_nvidia_smi"].split()[0]))
            except (ValueError, IndexError):
                pass
        total_gib = gib_by_slices[int(full["memory_slices"])]
        for r in rows:
            notes = [r["note"]] if r["note"] else []
            sm_text = r["sm_count"]
            if not sm_text.strip().isdigit():
                notes.append(f"sm_count: {sm_text}")
            gib_text = r["memory_gib_nvidia_smi"].split()[0] if r["memory_gib_nvidia_smi"] else ""
            slices = int(r["memory_slices"])
            try:
                gib = float(gib_text)
            except ValueError:
                # Missing listing: same-size profile of this GPU, else proportional share (derived).
                gib = gib_by_slices.get(slices, round(total_gib * slices / int(full["memory_slices"]), 2))
                notes.append(f"memory_gib derived from {slices} memory slices")
            nvdec_text = r["nvdec"]
            if not nvdec_text.strip().isdigit():
                notes.append(f"nvdec: {nvdec_text} (doc value used)")
            profiles.append(MigProfileRow(
                sku=sku, profile=r["profile_name"], gi_profile_id=int(r["gi_profile_id"]),
                compute_slices=int(r["compute_slices"]), memory_slices=slices,
                sm_count=_int_prefix(sm_text), memory_gib=gib, nvdec=_int_prefix(nvdec_text),
                jpeg=int(r["jpeg"]), ofa=int(r["ofa"]), copy_engines=int(r["copy_engines"]),
                max_instances=int(r["max_instances"]),
                source=f"{r['source_repo_or_url'].split(' ;')[0]} ({r['source_path_or_section'][:90]})",
                note="; ".join(notes)))

    placements = [
        MigPlacementRow(sku=FAMILY_SKU[r["gpu_family"]], profile=r["profile_name"],
                        start=int(r["start_mem_slice"]), size=int(r["size_mem_slices"]),
                        source=f"{r['source_repo_or_url']} ({r['source_path_or_section'][:80]})")
        for r in place_src
    ]
    return {"gpus": gpus + NON_MIG, "mig_profiles": profiles, "mig_placements": placements}


def write(tables: dict[str, list], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        fields = list(type(rows[0]).model_fields)
        with open(out / f"{name}.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
            w.writeheader()
            for row in rows:
                w.writerow({k: ("" if v is None else v) for k, v in row.model_dump(mode="json").items()})
        print(f"{name}: {len(rows)} rows")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES)
    write(curate(ap.parse_args().sources), SEED)
