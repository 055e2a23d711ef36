"""The Tenancy page's panel calls: every table from one call, consistent with the parts."""

import pytest

from engine.profiles import ProfileBook
from engine.studies.tenancy import memory_panel, tenancy_study
from engine.catalog import MPS_MAX_CLIENTS
from engine.tenancy import TenancyError, knee_gpu_pct, param_share_fit
from engine.tenancy.paramshare import LEAST_MEASURED_BUFFER_MB, MEASURED_BUFFER_MB, InstanceLimit, instance_limit


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def test_overview_panels_agree_with_each_other(book):
    o = tenancy_study(book, "resnet50", "V100-16GB", deadline_ms=30, batch=8)
    assert o.share.knee == knee_gpu_pct(o.share.curve)
    assert o.plan.max_instances == o.memory.limit.with_sharing  # Multi-Model capped by what fits and MPS allows
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
    assert m.fit.buffer_mb == 1475 and "measured" in m.buffer_from  # the seed's Table II buffer for VGG-19
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


def test_a_buffer_is_at_least_what_the_seed_measured_per_instance(book):
    """An instance holds a CUDA context and workspace besides its activations (Table II: 1252-1475 MB per instance),
    so a model the seed did not measure gets the least of them, and large activations count in full."""
    unmeasured = memory_panel(book, "efficientnet-b0", "A100-SXM4-80GB", batch=8)
    assert unmeasured.fit.buffer_mb == LEAST_MEASURED_BUFFER_MB == 1252
    row = book.models.loc["vgg19"]
    big = memory_panel(book, "vgg19", "A100-SXM4-80GB", batch=1024)
    assert big.fit.buffer_mb == pytest.approx(1024 * row["activation_mb_per_sample"])
    assert big.fit.buffer_mb > MEASURED_BUFFER_MB["vgg19"] and big.buffer_from.startswith("estimate")


def test_instances_per_gpu_stop_at_the_mps_client_limit(book):
    """Not 958 -> 2,227 ResNet-50 instances on an 80 GB A100: MPS serves 48 clients per GPU (Volta and later), and
    memory holds about 60 instances of 1.4 GB each."""
    m = memory_panel(book, "resnet50", "A100-SXM4-80GB", batch=8)
    assert book.gpu("A100-SXM4-80GB").mps_max_clients == MPS_MAX_CLIENTS == 48
    assert 48 < m.fit.without <= m.fit.with_sharing < 100
    assert (m.limit.without, m.limit.with_sharing) == (48, 48)
    assert m.limit.binding_without == m.limit.binding_with == InstanceLimit.MPS
    assert m.limit.explain().startswith("the MPS client limit binds: 48 clients per GPU")
    t4 = memory_panel(book, "resnet50", "T4-16GB", batch=8)  # 16 GB: memory binds long before 48 clients
    assert t4.limit.without == t4.fit.without < 48 and t4.limit.binding_with == InstanceLimit.MEMORY
    mixed = instance_limit(param_share_fit(81920, 30000, 1000), 48)  # shared weights free room past the limit
    assert (mixed.without, mixed.with_sharing) == (2, 48) and mixed.memory_with == 51
    assert (mixed.binding_without, mixed.binding_with) == (InstanceLimit.MEMORY, InstanceLimit.MPS)
    assert "GPU memory binds without shared weights (2)" in mixed.explain()
