"""Baseline partitionings of the PARIS/ELSA seed (Sec III, Sec V Table I) and scenarios built from layouts.

- GPU(n), n in 1, 2, 3, 4, 7: homogeneous, every GPU cut into as many instances of the n-GPC
  size as fit (Table I: 12 x GPU(2), 8 x GPU(3), 4 x GPU(7) on four A100s), optionally capped by
  a GPC budget (Table I gives MobileNet 24 x GPU(1) = 24 GPCs on four A100s).
- GPU(max): the homogeneous size with the best latency-bounded throughput for a scenario
  (Sec VI: "an optimistic homogeneous partitioning scheme"), found here with the analytic
  engine's SLA-bounded rate.
- random: each GPU takes one of its maximal layouts at random (seeded), then random instances
  are removed until a GPC budget holds (Table I: "varies", same GPCs as PARIS).
The n-GPC size is the MIG profile with n compute slices and the least memory, without media
extensions (A100-80GB: 1g.10gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from engine.catalog import Gpu, MigLayout, UnknownNameError, enumerate_layouts, validate_layout
from engine.partition.pack import PackingError, empty_layout, pack

#: the partition sizes (GPCs) the seed studies: GPU(1), GPU(2), GPU(3), GPU(4), GPU(7) (Sec III)
SIZES = (1, 2, 3, 4, 7)


def size_profiles(gpu: Gpu, sizes=SIZES) -> dict[int, str]:
    """{GPCs: profile} for the sizes this GPU offers (the least-memory profile, no '+me' variants)."""
    if not gpu.mig_capable:
        raise PackingError(f"{gpu.sku} does not support MIG; use GPU% shares instead")
    out = {}
    for n in sizes:
        plain = [p for p in gpu.profiles if p.compute_slices == n and "+" not in p.name]
        if plain:
            out[n] = min(plain, key=lambda p: (p.size, p.name)).name
    return out


def size_profile(gpu: Gpu, size: int | str) -> str:
    """The profile of GPU(size) (a number of GPCs), or `size` itself when it names a profile."""
    if isinstance(size, str) and not size.isdigit():
        try:
            return gpu.profile(size).name
        except UnknownNameError as e:
            raise PackingError(str(e)) from None
    n = int(size)
    have = size_profiles(gpu, range(1, gpu.compute_slices + 1))
    if n not in have:
        raise PackingError(f"{gpu.sku} has no {n}-GPC partition; sizes: "
                           f"{', '.join(f'GPU({k}) = {v}' for k, v in have.items())}")
    return have[n]


def per_gpu(gpu: Gpu, profile: str) -> int:
    """How many instances of `profile` one GPU holds at most."""
    return max(len(lay.instances) for lay in enumerate_layouts(gpu, [profile]))


def homogeneous(gpu: Gpu, gpus: int, size: int | str, max_gpcs: Optional[int] = None) -> list[MigLayout]:
    """GPU(size) on `gpus` GPUs: as many instances as fit, at most max_gpcs GPCs in all."""
    profile = size_profile(gpu, size)
    count = per_gpu(gpu, profile) * gpus
    if max_gpcs is not None:
        count = min(count, max_gpcs // gpu.profile(profile).compute_slices)
    if count < 1:
        raise PackingError(f"a GPC budget of {max_gpcs} holds no {profile} "
                           f"({gpu.profile(profile).compute_slices} GPCs each)")
    return pack(gpu, {profile: count}, gpus)


def random_layouts(gpu: Gpu, gpus: int, seed: int, max_gpcs: Optional[int] = None,
                   profiles: Optional[list[str]] = None) -> list[MigLayout]:
    """A random heterogeneous partitioning: per GPU a random maximal layout of `profiles` (default:
    the GPU(n) sizes), then random instances removed until at most max_gpcs GPCs remain (from GPUs
    with more than one instance while there are any, so GPUs stay in use). numpy default_rng(seed)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise PackingError(f"gpus: the number of GPUs must be a whole number >= 1, got {gpus!r}")
    names = profiles if profiles is not None else list(size_profiles(gpu).values())
    try:
        choices = enumerate_layouts(gpu, names)
    except UnknownNameError as e:
        raise PackingError(str(e)) from None
    rng = np.random.default_rng(seed)
    boards = [list(choices[int(rng.integers(len(choices)))].instances) for _ in range(gpus)]
    if max_gpcs is not None:
        def used() -> int:
            return sum(gpu.profile(i.profile).compute_slices for b in boards for i in b)

        while used() > max_gpcs:
            spare = [g for g, b in enumerate(boards) if len(b) > 1] or [g for g, b in enumerate(boards) if b]
            g = spare[int(rng.integers(len(spare)))]
            boards[g].pop(int(rng.integers(len(boards[g]))))
    return [validate_layout(gpu, [i.label() for i in b]) if b else empty_layout(gpu) for b in boards]


def scenario_with_layouts(base: dict, layouts: list[MigLayout], name: Optional[str] = None) -> dict:
    """Scenario data: `base` (a scenario dict or Scenario) with gpu = {sku, count, layouts} from
    placed layouts ('profile@start' entries). GPUs left empty are dropped (a MIG GPU with no
    instance serves nothing), so count is the number of GPUs in use."""
    if hasattr(base, "model_dump"):
        base = base.model_dump(mode="json", by_alias=True)
    used = [lay for lay in layouts if lay.instances]
    if not used:
        raise PackingError("the layouts hold no instance")
    skus = {lay.sku for lay in used}
    if len(skus) != 1:
        raise PackingError(f"the layouts are of several GPUs ({', '.join(sorted(skus))}); use one SKU")
    sku = skus.pop()
    base_sku = (base.get("gpu") or {}).get("sku", sku)
    if base_sku != sku:
        raise PackingError(f"the layouts are for {sku}, the scenario's gpu.sku is {base_sku}")
    out = {**base, "gpu": {"sku": sku, "count": len(used), "layouts": [lay.labels() for lay in used]}}
    if name is not None:
        out["name"] = name
    return out
