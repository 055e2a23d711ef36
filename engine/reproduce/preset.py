"""A Compare-page preset: a seed paper's headline comparison as designs, built from that paper's reproduction module.

Each paper module in engine.reproduce lists its presets beside its entries (`PRESETS`), built by the same scenario
functions the entries evaluate, so a preset and the registry cannot drift apart (one source);
engine.reproduce.registry gathers them (`presets()`, `build_preset(key, ctx)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel, ConfigDict

from engine.errors import KneepointError


class PresetError(KneepointError):
    """An unknown preset, or one whose engine part cannot answer; the message says which."""


class SeedPreset(BaseModel):
    """What the Compare page shows about a preset."""

    model_config = ConfigDict(frozen=True)

    name: str
    seed: str  # the paper, as in shared/seeds
    question: str  # what the comparison shows


@dataclass(frozen=True)
class Preset:
    """A preset's key, what it asks, and how its designs are built (ctx -> scenario dicts)."""

    key: str
    info: SeedPreset
    build: Callable[[object], list[dict]]
