"""GPU sides of the same physics share their remembered answers (GpuSide.same_physics, share_answers_of): a search's MIG
layouts whose different profiles have the same tables work each rate out once, and nothing else is shared."""

from __future__ import annotations

import numpy as np
import pytest

from engine.analytic import Context, build_design
from engine.analytic.rates import compute_gpu_point, gpu_point
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.vocab import SchedulerPolicy

ONE_ITEM = np.array([1.0])  # every query one item


@pytest.fixture(scope="module")
def side(store):
    scenario = load_scenario({**DEFAULT_SCENARIO, "gpu": {"sku": "A100-SXM4-80GB",
                                                          "layout": ["3g.40gb", "2g.20gb", "1g.10gb"]}})
    return build_design(scenario, Context.from_store(store)).gpu


def _point(side, rate):
    return gpu_point(side, SchedulerPolicy.FIFS, rate, 1.0, ONE_ITEM, 0.99)


def test_a_relabelled_side_reads_the_answers_and_a_changed_one_does_not(side):
    relabelled = side.with_partitions(tuple(p.model_copy(update={"label": f"elsewhere {k}", "gpu_index": 3})
                                            for k, p in enumerate(side.partitions)))
    slower = side.with_partitions(tuple(p.model_copy(update={"mean_s": p.mean_s * 1.01}) for p in side.partitions))
    renamed = side.with_partitions(tuple(p.model_copy(update={"name": "1g.10gb"}) for p in side.partitions))
    first_batch_slower = side.with_partitions(tuple(
        p.model_copy(update={"mean_s": np.concatenate([p.mean_s[:1] * 1.01, p.mean_s[1:]])}) for p in side.partitions))
    assert relabelled.same_physics(side)
    assert not slower.same_physics(side)
    assert first_batch_slower.physics() == side.physics() and not first_batch_slower.same_physics(side)  # every entry
    assert not renamed.same_physics(side)  # one name: grouped as one profile, its sums in another order
    for other in (slower, first_batch_slower):
        with pytest.raises(ValueError):
            other.share_answers_of(side)
    relabelled.share_answers_of(side)
    first = _point(side, 500.0)
    assert _point(relabelled, 500.0) is first  # read, not worked out again
    assert _point(relabelled, 500.0) == compute_gpu_point(relabelled, SchedulerPolicy.FIFS, 500.0, 1.0, ONE_ITEM,
                                                          0.99)
    assert _point(slower, 500.0).service_mean_s > first.service_mean_s  # its own answer


def test_designs_of_one_physics_share_a_context_s_answers(store):
    """1g.10gb and 1g.10gb+me at the same place: other profiles (so not twins: engine.search.space.gpu_twin_key),
    the same tables for this model."""
    ctx = Context.from_store(store)
    sides = [build_design(load_scenario({**DEFAULT_SCENARIO, "gpu": {"sku": "A100-SXM4-80GB", "layout": [
        "3g.40gb@0", "1g.20gb@4", last]}}), ctx).gpu for last in ("1g.10gb@6", "1g.10gb+me@6")]
    assert sides[0] is not sides[1] and sides[0].same_physics(sides[1])
    assert _point(sides[1], 700.0) is _point(sides[0], 700.0)
