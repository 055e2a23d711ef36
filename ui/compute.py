"""Run a long engine call (a simulation, a search) with a progress bar, and keep its result for every session.

`st.cache_data` records the elements a cached function writes and replays them on a hit; a progress callback that
writes to a bar made outside the function makes that replay fail (CacheReplayClosureError) for whoever asks the
same question second. Here the cached part is plain data that never touches Streamlit: a process-wide, bounded
map from the call's inputs to its pickled result. On a miss the bar is drawn and driven while the engine computes;
on a hit no bar is drawn at all. Results are stored pickled, so no session can change another's copy.
"""

from __future__ import annotations

import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Optional, TypeVar

import streamlit as st

T = TypeVar("T")
Progress = Callable[..., None]  # progress(fraction) or progress(fraction, message), as the engine calls it

RESULTS_PER_KIND = 32  # results kept per kind of call: a few sessions' worth, a few MB of pickles at most
_MISSING = object()


class ResultCache:
    """A thread-safe, bounded (least recently used first out) map of pickled results."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        """The stored result (a fresh copy), or _MISSING."""
        with self._lock:
            blob = self._items.get(key)
            if blob is None:
                return _MISSING
            self._items.move_to_end(key)
        return pickle.loads(blob)

    def put(self, key: Hashable, value) -> None:
        blob = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._items[key] = blob
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


@st.cache_resource(show_spinner=False)
def _caches() -> dict[str, ResultCache]:
    """One ResultCache per kind of call, shared by every session of this server process."""
    return {}


_caches_lock = threading.Lock()


def result_cache(kind: str) -> ResultCache:
    """The process-wide cache of one kind of call (e.g. 'design-sim')."""
    caches = _caches()
    with _caches_lock:
        return caches.setdefault(kind, ResultCache(RESULTS_PER_KIND))


def run_with_progress(kind: str, key: tuple, compute: Callable[[Progress], T], text: str = "working...") -> T:
    """The result of `compute(progress)` for these inputs: kept from an earlier call (by any session) with the same
    `kind` and `key`, else computed now while a progress bar labelled `text` follows `progress`. `key` must hold
    every input that changes the result (including the data version). Errors are raised, not kept. Two sessions
    asking the same new question at once both compute it (the engine is deterministic for its inputs and seed)."""
    cache = result_cache(kind)
    held = cache.get(key)
    if held is not _MISSING:
        return held
    bar = st.progress(0.0, text=text)

    def progress(fraction: float, message: Optional[str] = None) -> None:
        fraction = min(max(float(fraction), 0.0), 1.0)
        bar.progress(fraction, text=message or f"{text} {fraction:.0%}")

    try:
        value = compute(progress)
    finally:
        bar.empty()
    cache.put(key, value)
    return value
