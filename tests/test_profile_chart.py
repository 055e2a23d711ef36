"""The Profiles partitions chart drawn at 1 % batch steps (engine/charts/profiles.drawn_batches)."""

from __future__ import annotations

import numpy as np

from engine.charts.profiles import DENSE_UP_TO, STEP, drawn_batches


def test_a_curve_is_drawn_densely_then_at_one_percent_steps():
    batches = np.arange(1, 17_655)
    keep = drawn_batches(batches)
    drawn = batches[keep]
    assert keep[: DENSE_UP_TO].all() and drawn[-1] == batches[-1]
    assert len(drawn) < 1_000  # a few hundred points instead of 17,654
    beyond = drawn[drawn > DENSE_UP_TO]
    assert (beyond[1:] / beyond[:-1]).max() <= STEP ** 2  # no gap wider than two steps on the log axis
    assert drawn_batches(np.arange(1, 10)).all()  # a short curve (measured points) is drawn whole
