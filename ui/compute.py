"""Cached engine calls: `engine_call`, the one decorator every page's engine call goes through, and the "run with a
progress bar and keep the result" cache it uses for long calls (a simulation, a search).

`@engine_call(...)` caches a function's result per its arguments (a Scenario counts as its JSON, a list as a tuple)
and the data version of this session's store, so an import is never answered from an older cache. A quick call is
kept by `st.cache_data`; a long one (`progress=`) takes a `progress` argument and goes through run_with_progress.

`st.cache_data` records the elements a cached function writes and replays them on a hit; a progress callback that
writes to a bar made outside the function makes that replay fail (CacheReplayClosureError) for whoever asks the
same question second. Here the cached part is plain data that never touches Streamlit: a process-wide, bounded
map from the call's inputs to its pickled result. On a miss the bar is drawn and driven while the engine computes;
on a hit no bar is drawn at all. Results are stored pickled, so no session can change another's copy.
"""

from __future__ import annotations

import functools
import inspect
import pickle
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Optional, TypeVar

import streamlit as st

from engine.errors import KneepointError
from engine.scenario import Scenario
from ui.session import get_store
from ui.text import md

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


def kept_result(name: str, inputs: Hashable, pressed: bool, compute: Callable[[], T], failure: str) -> Optional[T]:
    """A button's result (Simulate, Search, Size), kept in this session for the inputs it was computed for.

    When `pressed`, `compute()` runs now (a cached engine call with its progress bar) and its result is kept under
    session key `name` with `inputs`; a KneepointError is shown as '<failure>: <message>'. Returns the result kept
    for these same `inputs`, or None: a result computed for other inputs (the user changed one) is never shown."""
    if pressed:
        try:
            st.session_state[name] = (inputs, compute())
        except KneepointError as error:
            st.error(f"{failure}: {md(error)}")
    held = st.session_state.get(name)
    return held[1] if held and held[0] == inputs else None


def _key_part(value):
    """An argument as a hashable, stable part of a cache key: a Scenario as its JSON, a list or tuple as a tuple."""
    if isinstance(value, Scenario):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return tuple(_key_part(item) for item in value)
    return value


def engine_call(entries: int = 64, spinner: str | bool = False, progress: Optional[str] = None,
                kind: Optional[str] = None, unkeyed: Iterable[str] = ()):
    """Decorator for a ui/ function that calls the engine: its result is kept per its arguments and the store's data
    version (see the module's docstring). Arguments must be plain data or Scenarios.

    entries, spinner: how many results `st.cache_data` keeps and what it shows while computing.
    progress, kind: for a long call: the function takes a keyword argument `progress` (the engine's callback), its
      results are kept by run_with_progress under `kind` for every session, and `progress` labels the bar.
    unkeyed: names of arguments that do not change the answer (e.g. the executor), left out of the key."""
    skip = {"progress", *unkeyed}

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(function)

        def key_of(args, kwargs) -> tuple[tuple, inspect.BoundArguments]:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            bound.arguments.pop("progress", None)  # given by run_with_progress, never by the caller
            parts = tuple((name, _key_part(value)) for name, value in bound.arguments.items() if name not in skip)
            return (get_store().version(), parts), bound

        if progress is not None:
            @functools.wraps(function)
            def with_progress(*args, **kwargs) -> T:
                key, bound = key_of(args, kwargs)
                return run_with_progress(kind or function.__qualname__, key,
                                         lambda report: function(*bound.args, **bound.kwargs, progress=report),
                                         progress)
            return with_progress

        def cached(key: tuple, _bound: inspect.BoundArguments) -> T:  # `_bound` is not hashed (leading underscore)
            return function(*_bound.args, **_bound.kwargs)

        # st.cache_data tells functions apart by module and qualified name: give this one the decorated function's
        cached.__module__, cached.__qualname__ = function.__module__, function.__qualname__
        cached = st.cache_data(max_entries=entries, show_spinner=spinner)(cached)

        @functools.wraps(function)
        def call(*args, **kwargs) -> T:
            key, bound = key_of(args, kwargs)
            return cached(key, bound)

        return call

    return decorate
