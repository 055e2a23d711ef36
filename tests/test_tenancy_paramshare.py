"""Param-Share memory fit (GPU runtime primitives seed, Sec V-E, Table II)."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.tenancy import TenancyError, param_share_fit, standby_extra_mb

TABLE_II = ("ResNet-50", "VGG-19", "ResNeXt-50")


def _figure(store, item: str, category: str = "param_share") -> float:
    df = store.table("rpc_figures")
    row = df[(df["category"] == category) & (df["item"] == item)]
    assert len(row) == 1, f"rpc_figures needs exactly one row {category}/{item!r}"
    return float(row["value"].iloc[0])


@pytest.mark.parametrize("model", TABLE_II)
def test_table_ii_counts_are_reproduced(store, model):
    memory = _figure(store, "T4 GPU memory")
    fit = param_share_fit(memory, _figure(store, f"{model} weights"), _figure(store, f"{model} other GPU buffer"))
    assert fit.without == _figure(store, f"{model} instances without P.S.")
    assert fit.with_sharing == _figure(store, f"{model} instances with P.S.")


def test_table_ii_memory_reading_is_the_gb_as_gib_one(store):
    # "16 GB" of the T4 read as 16 x 1024 MB: the row states it, and a 10^9-byte reading breaks the counts
    memory = _figure(store, "T4 GPU memory")
    assert memory == 16 * 1024
    fits = [param_share_fit(16e3, _figure(store, f"{m} weights"), _figure(store, f"{m} other GPU buffer"))
            for m in TABLE_II]
    counts = [(_figure(store, f"{m} instances without P.S."), _figure(store, f"{m} instances with P.S."))
              for m in TABLE_II]
    assert any((f.without, f.with_sharing) != c for f, c in zip(fits, counts))


sizes = st.integers(1, 100_000)


@given(sizes, st.integers(0, 50_000), st.integers(1, 20_000))
def test_counts_are_tight_and_sharing_never_fits_fewer(memory, weights, buffer):
    f = param_share_fit(memory, weights, buffer)
    assert f.with_sharing >= f.without >= 0
    assert f.used_without_mb <= memory and f.used_with_mb <= memory
    assert (f.without + 1) * (weights + buffer) > memory  # one more would not fit
    assert weights + (f.with_sharing + 1) * buffer > memory


@given(st.floats(0, 5e4), st.floats(1, 2e4))
def test_a_standby_instance_adds_only_its_buffer_when_weights_are_shared(weights, buffer):
    shared, own = standby_extra_mb(weights, buffer, shared=True), standby_extra_mb(weights, buffer, shared=False)
    assert shared == buffer and math.isclose(own - shared, weights, abs_tol=1e-9)


def test_nothing_fits_when_the_weights_do_not():
    f = param_share_fit(1000, 1200, 10)
    assert (f.without, f.with_sharing, f.used_with_mb) == (0, 0, 0.0)


@pytest.mark.parametrize("args, field", [((16384, -5, 1400), "weights_mb"), ((16384, 100, 0), "buffer_mb"),
                                         ((float("nan"), 100, 1400), "gpu_memory_mb"),
                                         ((0, 100, 1400), "gpu_memory_mb")])
def test_bad_sizes_name_the_field(args, field):
    with pytest.raises(TenancyError, match=field):
        param_share_fit(*args)


def test_the_default_buffers_are_the_seeds_measured_ones(store):
    from engine.tenancy.paramshare import MEASURED_BUFFER_MB

    names = {"resnet50": "ResNet-50", "vgg19": "VGG-19", "resnext50": "ResNeXt-50"}
    assert MEASURED_BUFFER_MB == {model: _figure(store, f"{name} other GPU buffer") for model, name in names.items()}
