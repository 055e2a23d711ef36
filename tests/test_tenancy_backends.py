"""MIG tenants per profile and the FPGA / cold-start view of the Tenancy page."""

import pytest

from engine.profiles import ProfileBook
from engine.studies.tenancy_backends import tenancy_backends_study
from engine.tenancy.errors import TenancyError
from engine.tenancy.mig import mig_tenancy


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def test_mig_rows_follow_the_catalogue_and_the_profiles(book):
    rows = mig_tenancy(book, "resnet50", "A100-SXM4-80GB", batch=8)
    gpu = book.gpu("A100-SXM4-80GB")
    assert [r.profile for r in rows] == [p.name for p in gpu.profiles]
    by = {r.profile: r for r in rows}
    assert by["1g.10gb"].tenants_per_gpu == 7 and by["7g.80gb"].tenants_per_gpu == 1
    for r in rows:
        pred = book.predict("resnet50", "A100-SXM4-80GB", r.profile, 8)
        assert r.mean_ms == pytest.approx(pred.mean_s * 1e3)
        assert r.throughput_per_gpu == pytest.approx(r.tenants_per_gpu * pred.throughput)
    assert by["1g.10gb"].mean_ms > by["7g.80gb"].mean_ms  # a smaller slice is slower per batch


def test_mig_refuses_a_gpu_without_mig(book):
    with pytest.raises(TenancyError, match="does not support MIG"):
        mig_tenancy(book, "resnet50", "T4-16GB")


def test_backend_view_uses_given_times_and_says_when_it_stands_in(book):
    given = tenancy_backends_study(book, "resnet50", "A100-SXM4-80GB", fpga_ms=2.0, cpu_ms=15.0)
    assert given.notes == () and given.fpga_threads["ms_per_request"].iloc[0] == pytest.approx(2.0)
    cold = given.cold_start.set_index("platform")
    assert cold.loc["fpga", "cold_start_share"] < cold.loc["gpu", "cold_start_share"]  # streaming starts early
    stand_in = tenancy_backends_study(book, "resnet50", "A100-SXM4-80GB")
    assert len(stand_in.notes) == 2 and stand_in.fpga_ms == stand_in.gpu_ms
    with pytest.raises(TenancyError, match="fpga_ms must be above 0"):
        tenancy_backends_study(book, "resnet50", "A100-SXM4-80GB", fpga_ms=-1.0)


def test_gpu_pct_inside_a_mig_slice(book):
    from engine.tenancy.gpu_share import latency_vs_gpu_pct

    sku = "A100-SXM4-80GB"
    assert book.sm_count(sku, "3g.40gb/mps:50") == pytest.approx(book.sm_count(sku, "3g.40gb") / 2)
    assert book.memory_mb(sku, "3g.40gb/mps:50") == book.memory_mb(sku, "3g.40gb")
    curve = latency_vs_gpu_pct(book, "resnet50", sku, batch=8, step=25, mig_profile="3g.40gb")
    whole_slice = book.predict("resnet50", sku, "3g.40gb", 8).mean_s * 1e3
    assert curve.mig_profile == "3g.40gb" and curve.at(100).mean_ms == pytest.approx(whole_slice, rel=1e-6)
    assert curve.at(25).mean_ms > curve.at(50).mean_ms > curve.at(100).mean_ms
    with pytest.raises(Exception, match="not a partition"):
        latency_vs_gpu_pct(book, "resnet50", "T4-16GB", mig_profile="1g.5gb")
