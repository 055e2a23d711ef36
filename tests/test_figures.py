"""Figures kept per input (ui/figures.py) and the Profiles partitions chart drawn at 1 % batch steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.charts.profiles import DENSE_UP_TO, STEP, drawn_batches
from ui.figures import FigureCache, digest


def _bars(values: list[float], title: str = "t") -> go.Figure:
    return go.Figure(go.Bar(y=values), layout=dict(title=title))


def test_same_inputs_build_once_other_inputs_build_their_own():
    cache, built = FigureCache(8), []

    def draw(values, title="t"):
        built.append((tuple(values), title))
        return _bars(values, title)

    def get(values, **kw):
        return cache.get_or_build(digest(draw, (values,), kw), lambda: draw(values, **kw))

    first = get([1.0, 2.0])
    assert get([1.0, 2.0]) is first and len(built) == 1  # a rerun with the same inputs: no rebuild
    other = get([1.0, 2.5])
    titled = get([1.0, 2.0], title="u")
    assert len(built) == 3 and other is not first and titled is not first
    assert list(other.data[0].y) == [1.0, 2.5] and titled.layout.title.text == "u"


def test_the_key_tells_builders_and_data_apart():
    frame = pd.DataFrame({"x": [1, 2], "y": [0.5, 0.25]})
    assert digest(_bars, (frame,), {}) == digest(_bars, (frame.copy(),), {})
    changed = frame.copy()
    changed.loc[1, "y"] = 0.2500001
    assert digest(_bars, (frame,), {}) != digest(_bars, (changed,), {})
    assert digest(_bars, (frame,), {}) != digest(test_the_key_tells_builders_and_data_apart, (frame,), {})


def test_the_cache_is_bounded_least_recently_used_first_out():
    cache = FigureCache(2)
    for i in range(3):
        cache.get_or_build(i, lambda i=i: _bars([i]))
    cache.get_or_build(1, lambda: None)  # a hit: 1 becomes the most recent
    cache.get_or_build(3, lambda: _bars([3]))
    assert len(cache) == 2 and cache.hits == 1 and cache.misses == 4
    assert cache.get_or_build(1, lambda: "rebuilt") is not None and cache.hits == 2
    assert cache.get_or_build(0, lambda: "rebuilt") == "rebuilt"  # the oldest went first


def test_a_curve_is_drawn_densely_then_at_one_percent_steps():
    batches = np.arange(1, 17_655)
    keep = drawn_batches(batches)
    drawn = batches[keep]
    assert keep[: DENSE_UP_TO].all() and drawn[-1] == batches[-1]
    assert len(drawn) < 1_000  # a few hundred points instead of 17,654
    beyond = drawn[drawn > DENSE_UP_TO]
    assert (beyond[1:] / beyond[:-1]).max() <= STEP ** 2  # no gap wider than two steps on the log axis
    assert drawn_batches(np.arange(1, 10)).all()  # a short curve (measured points) is drawn whole
