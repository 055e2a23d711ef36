"""Comparisons that reproduce each seed paper's headline result, one preset away on the Compare page.

Each preset builds its designs from the Design page's default question (engine.presets.DEFAULT_SCENARIO)
by changing only what the paper compares; designs that need an engine answer first (PARIS's partition
counts, Multi-Model's instances) get it from the engine when the preset is built, never from a table.
`build_preset(name, ctx)` returns the designs as scenario dicts; an unknown name lists the valid ones.
"""

from __future__ import annotations

import copy
from typing import Callable

from pydantic import BaseModel, ConfigDict

from engine.presets import DEFAULT_SCENARIO


class PresetError(ValueError):
    """An unknown preset, or one whose engine part cannot answer; the message says which."""


class SeedPreset(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    seed: str  # the paper, as in shared/seeds
    question: str  # what the comparison shows


def _with(name: str, **parts) -> dict:
    s = copy.deepcopy(DEFAULT_SCENARIO)
    s["name"] = name
    for k, v in parts.items():
        s[k] = {**s.get(k, {}), **v} if isinstance(v, dict) and isinstance(s.get(k), dict) else v
    return s


def _preba(ctx) -> list[dict]:
    return [_with(f"7 x 1g, {label}", preprocessing={"device": dev})
            for dev, label in (("cpu", "CPU preprocessing"), ("dpu", "DPU preprocessing"), ("none", "ideal (none)"))]


def _splitrpc(ctx) -> list[dict]:
    from engine.scenario import RpcPreset

    return [_with(f"RPC {p.value}", rpc={"preset": p.value}, preprocessing={"device": "none"}) for p in RpcPreset]


_BUILDERS: dict[str, tuple[SeedPreset, Callable]] = {
    "preba": (SeedPreset(name="PREBA: CPU vs DPU preprocessing vs ideal on 7 x 1g", seed="preba-mig-preprocessing-batching",
                         question="Is 7 x 1g ResNet-50 CPU-bound, and does an FPGA DPU recover the ideal?"), _preba),
    "splitrpc": (SeedPreset(name="SplitRPC: the six RPC paths", seed="splitrpc-control-data-path-rpc",
                            question="What does each RPC path add to latency and host CPU, and what does "
                                     "splitting control and data paths buy?"), _splitrpc),
}


def presets() -> dict[str, SeedPreset]:
    """Every preset by key."""
    return {k: v[0] for k, v in _BUILDERS.items()}


def build_preset(key: str, ctx) -> list[dict]:
    """The designs of preset `key` as scenario dicts (validate with engine.scenario.load_scenario)."""
    if key not in _BUILDERS:
        raise PresetError(f"{key!r} is not a preset; valid: {', '.join(_BUILDERS)}")
    return _BUILDERS[key][1](ctx)
