"""Charts kept per input: `plot(build, *args, key=...)` draws `build(*args)` (an engine/charts function) with
st.plotly_chart, building the plotly figure only when no session of this process has drawn it for the same inputs.

A rerun redraws every chart of a page, and building a plotly figure (validating every trace) costs tens to
hundreds of milliseconds where the numbers behind it took a cached lookup; a rerun that changed something else
(another tab's input, a toggle of one chart) then paid for every figure again (issue 19).

The key is a digest of the pickled inputs: equal bytes mean equal inputs, so a hit can only return the figure of the
same inputs (a miss costs a rebuild, never a wrong chart); no store version is needed because the inputs are the data
themselves. Figures are shared by every session and never copied: st.plotly_chart reads a figure (`to_dict()`, a
deep copy) and never changes it, and nothing else may (figures built here are not returned to the page).
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import streamlit as st

#: figures kept by the process: every chart of every page a few times over, a few MB in all
FIGURES = 96


class FigureCache:
    """A thread-safe, bounded (least recently used first out) map of digest -> figure."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[Hashable, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get_or_build(self, key: Hashable, build: Callable[[], Any]) -> Any:
        with self._lock:
            figure = self._items.get(key)
            if figure is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return figure
            self.misses += 1
        figure = build()  # outside the lock: two sessions asking the same new chart at once both build it
        with self._lock:
            self._items[key] = figure
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)
        return figure

    def __len__(self) -> int:
        return len(self._items)


@st.cache_resource(show_spinner=False)
def figure_cache() -> FigureCache:
    """The figures of this server process, shared by every session."""
    return FigureCache(FIGURES)


def digest(build: Callable, args: tuple, kwargs: dict) -> bytes:
    """A key that equals another only for the same builder and equal pickled inputs."""
    blob = pickle.dumps((build.__module__, build.__qualname__, args, sorted(kwargs.items())),
                        protocol=pickle.HIGHEST_PROTOCOL)
    return hashlib.blake2b(blob, digest_size=20).digest()


def plot(build: Callable[..., Any], *args, key: str, chart_kwargs: dict | None = None, **kwargs) -> None:
    """st.plotly_chart(build(*args, **kwargs), key=key, **chart_kwargs), the figure kept per its inputs."""
    figure = figure_cache().get_or_build(digest(build, args, kwargs), lambda: build(*args, **kwargs))
    st.plotly_chart(figure, key=key, **(chart_kwargs or {}))
