"""Every reproduction entry and Compare preset, one module per paper; `entries(paper)` picks one paper's entries
(or all), `presets()` and `build_preset(key, ctx)` the Compare page's presets, built by the same modules."""

from __future__ import annotations

from typing import Optional

from engine.errors import KneepointError
from engine.reproduce.entry import Entry
from engine.seed.papers import PAPERS
from engine.reproduce.preset import Preset, PresetError, SeedPreset
from engine.reproduce import eif, gpu_primitives, paris_elsa, preba, splitrpc


class UnknownPaperError(KneepointError):
    """A paper key that is not one of the seeds; the message lists the valid ones."""


def _modules() -> dict[str, tuple[Entry, ...]]:
    return {"preba": preba.ENTRIES, "paris-elsa": paris_elsa.ENTRIES, "gpu-primitives": gpu_primitives.ENTRIES,
            "eif": eif.ENTRIES, "splitrpc": splitrpc.ENTRIES}


def entries(paper: Optional[str] = None) -> tuple[Entry, ...]:
    """The entries of `paper` (a PAPERS key), or of every paper in PAPERS order."""
    if paper is not None and paper not in PAPERS:
        raise UnknownPaperError(f"{paper!r} is not a seed paper; valid: {', '.join(PAPERS)}")
    by_paper = _modules()
    return tuple(e for p in PAPERS if paper in (None, p) for e in by_paper[p])


def _presets() -> dict[str, Preset]:
    return {p.key: p for m in (preba, splitrpc, paris_elsa, gpu_primitives, eif) for p in m.PRESETS}


def presets() -> dict[str, SeedPreset]:
    """Every Compare preset by key (PREBA's first: the page opens on it)."""
    return {k: p.info for k, p in _presets().items()}


def presets_of(paper: str) -> dict[str, SeedPreset]:
    """The Compare presets of `paper` (a PAPERS key), by key."""
    if paper not in PAPERS:
        raise UnknownPaperError(f"{paper!r} is not a seed paper; valid: {', '.join(PAPERS)}")
    return {k: p for k, p in presets().items() if p.seed == PAPERS[paper]}


def build_preset(key: str, ctx) -> list[dict]:
    """The designs of preset `key` as scenario dicts (validate with engine.scenario.load_scenario)."""
    every = _presets()
    if key not in every:
        raise PresetError(f"{key!r} is not a preset; valid: {', '.join(every)}")
    return every[key].build(ctx)
