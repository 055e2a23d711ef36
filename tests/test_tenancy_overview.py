"""The Tenancy page's panel calls: every table from one call, consistent with the parts."""

import pytest

from engine.profiles import ProfileBook
from engine.studies.tenancy import memory_panel, tenancy_study
from engine.tenancy import TenancyError, knee_gpu_pct, param_share_fit


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def test_overview_panels_agree_with_each_other(book):
    o = tenancy_study(book, "resnet50", "V100-16GB", deadline_ms=30, batch=8)
    assert o.share.knee == knee_gpu_pct(o.share.curve)
    assert o.plan.max_instances == o.memory.fit.with_sharing  # Multi-Model capped by what fits
    assert o.oversubscription.gpu_pct_each == o.share.knee.gpu_pct
    assert o.oversubscription.rows[-1].total_pct >= 200
    assert o.reconfiguration.rate_rps == o.plan.best.throughput_items_per_s
    for table in (o.share.curve.rows(), o.plan.table(), o.memory.fit.table(), o.oversubscription.table(),
                  o.reconfiguration.table()):
        assert table and all(isinstance(r, dict) for r in table)


def test_memory_defaults_come_from_the_store(book):
    m = memory_panel(book, "vgg19", "T4-16GB", batch=4)
    row = book.models.loc["vgg19"]
    assert m.fit.weights_mb == row["weights_mb"]
    assert m.fit.buffer_mb == pytest.approx(4 * row["activation_mb_per_sample"])
    assert m.fit.gpu_memory_mb == book.memory_mb("T4-16GB", "full")
    assert m.standby_extra_mb_with < m.standby_extra_mb_without
    given = memory_panel(book, "vgg19", "T4-16GB", weights_mb=549, buffer_mb=1475, gpu_memory_mb=16384)
    assert given.fit == param_share_fit(16384, 549, 1475) and given.buffer_from == "given"


def test_without_shared_weights_fewer_instances_may_run(book):
    kw = dict(deadline_ms=30, batch=1, weights_mb=100, buffer_mb=1400, gpu_memory_mb=16384)
    shared = tenancy_study(book, "resnet50", "V100-16GB", **kw)
    own = tenancy_study(book, "resnet50", "V100-16GB", share_weights=False, **kw)
    assert (own.plan.max_instances, shared.plan.max_instances) == (10, 11)
    assert own.plan.best.instances <= 10 and shared.plan.best.instances <= 11


def test_overview_refuses_what_cannot_run(book):
    with pytest.raises(TenancyError, match="not one instance"):
        tenancy_study(book, "resnet50", "V100-16GB", deadline_ms=30, weights_mb=20000, buffer_mb=10)
    with pytest.raises(TenancyError, match="deadline_ms"):
        tenancy_study(book, "resnet50", "V100-16GB", deadline_ms=-1)
    with pytest.raises(TenancyError, match="weights_mb and buffer_mb"):
        memory_panel(book, "not-a-model", "V100-16GB")
