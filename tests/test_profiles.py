"""Service-time model: interpolation, slice-law fit, knees, derived partitions, memory and lengths."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.profiles import OutOfRange, ProfileBook, ProfileError, fit_slice_law, slice_latency
from engine.profiles.interp import interp_log_batch
from engine.profiles.knee import knee_curve, knee_utilization
from engine.profiles.tails import jitter_factor

increasing = st.lists(st.floats(0.01, 500), min_size=2, max_size=10).map(sorted).map(np.cumsum)


# -- interpolation ------------------------------------------------------------------

@given(increasing, st.floats(0, 1))
def test_interpolation_is_exact_monotone_and_bounded(lat, frac):
    batches = 2 ** np.arange(len(lat))
    assert np.allclose(interp_log_batch(batches, lat, batches), lat)
    q = np.sort(np.exp(np.log(batches[0]) + frac * np.log(batches[-1] / batches[0]) * np.linspace(0, 1, 20)))
    v = interp_log_batch(batches, lat, q)
    assert np.all(np.diff(v) >= -1e-9)
    assert lat[0] - 1e-9 <= v.min() and v.max() <= lat[-1] + 1e-9


def test_interpolation_refuses_outside_range():
    with pytest.raises(OutOfRange, match="outside the profiled range 1..64"):
        interp_log_batch([1, 8, 64], [1.0, 2.0, 9.0], 65)
    with pytest.raises(OutOfRange):
        interp_log_batch([2, 8], [1.0, 2.0], 1)


# -- slice law -------------------------------------------------------------------------

@settings(max_examples=60)
@given(st.floats(1e-4, 0.05), st.floats(50, 50_000))
def test_fit_recovers_known_parameters(t_fixed, T):
    b = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256])
    fit = fit_slice_law(b, t_fixed + b / T)
    assert math.isclose(fit.t_fixed_s, t_fixed, rel_tol=1e-6, abs_tol=1e-9)
    assert math.isclose(fit.saturated_throughput, T, rel_tol=1e-6)
    assert fit.rms_rel_error < 1e-9


def test_fit_reports_residuals_of_noisy_curve():
    rng = np.random.default_rng(7)
    b = np.array([1, 2, 4, 8, 16, 32, 64])
    noisy = (0.002 + b / 3000) * (1 + rng.normal(0, 0.03, len(b)))
    fit = fit_slice_law(b, noisy)
    assert len(fit.residuals) == len(b) and 0.005 < fit.rms_rel_error < 0.1
    assert math.isclose(fit.saturated_throughput, 3000, rel_tol=0.15)


def test_slice_behaves_like_reference_at_b_over_s():
    fit = fit_slice_law([1, 4, 16, 64], [0.001 + b / 2000 for b in (1, 4, 16, 64)])
    s = 14 / 108
    assert math.isclose(slice_latency(fit, 8, s), slice_latency(fit, 8 / s, 1.0))


def test_preba_knee_ratio_follows_from_slice_law():
    """PREBA 3.2: knees 16/4/2 on 1g.5gb against 128/32/16 on 7g.40gb, about 7-8x apart."""
    b = np.arange(1, 257)
    ref = 0.004 + b / 1500  # a reference curve on the full A100 (108 SMs)
    fit = fit_slice_law(b, ref)
    knees = {}
    for name, sms in (("1g", 14), ("7g", 98)):
        s = sms / 108
        grid = np.arange(1, int(s * 256) + 1)
        knees[name] = grid[knee_utilization(grid, grid / slice_latency(fit, grid, s))]
    assert 5 <= knees["7g"] / knees["1g"] <= 9


# -- knees ----------------------------------------------------------------------------

def test_utilization_knee_on_known_curve():
    b = np.array([1, 2, 4, 8, 16, 32])
    x = np.array([10, 20, 40, 79, 81, 82.0])  # 0.8 x 82 = 65.6 first reached at batch 8
    assert b[knee_utilization(b, x, 0.8)] == 8
    assert b[knee_utilization(b, x, 0.99)] == 32  # 81/82 < 0.99
    with pytest.raises(ValueError):
        knee_utilization(b, x, 1.5)


def test_curve_knee_on_known_curve():
    # throughput rises then plateaus while latency keeps growing: the knee is at the bend
    x = np.array([100, 200, 390, 400, 405, 407.0])
    y = np.array([1, 1.1, 1.3, 3, 6, 12.0])
    assert knee_curve(x, y) == 2


def test_jitter_model():
    assert jitter_factor(50) < 1 < jitter_factor(95) < jitter_factor(99) < 1.15


# -- the book over the store's data ---------------------------------------------------

@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def test_published_prediction_is_exact_at_a_point(book, store):
    row = store.latency_points(model=["resnet50"], sku=["T4-16GB"]).iloc[3]
    p = book.predict("resnet50", "T4-16GB", "full", int(row["batch"]), precision=row["precision"],
                     framework=row["framework"])
    assert p.provenance == "published" and math.isclose(p.mean_s, row["mean_ms"] / 1e3)
    if not pd.isna(row["p99_ms"]):
        assert math.isclose(p.tail_s[99], row["p99_ms"] / 1e3) and p.tail_source == "published"


def test_derived_partition_has_reference_and_fit(book):
    full = book.predict("resnet50", "A100-SXM4-80GB", "full", 4)
    one_g = book.predict("resnet50", "A100-SXM4-80GB", "1g.10gb", 4)
    assert one_g.provenance == "derived" and one_g.reference.startswith("A100-SXM4-80GB full")
    assert one_g.fit_rms_rel_error is not None and math.isclose(one_g.sm_ratio, 14 / 108)
    assert one_g.mean_s > full.mean_s and not one_g.cross_gpu
    assert 0 < one_g.utilization <= 1


def test_a_curve_asked_without_precision_is_the_curve_of_the_precision_picked(book, store):
    """One curve per series, whichever way it is asked for (a search asked both ways: 14 curves for 7 partitions)."""
    for partition in ("full", "1g.10gb"):
        picked = book.curve("resnet50", "A100-SXM4-80GB", partition)
        key = picked.key
        assert book.curve("resnet50", "A100-SXM4-80GB", partition, key.precision, key.framework) is picked
        fresh = ProfileBook.from_store(store).curve("resnet50", "A100-SXM4-80GB", partition, key.precision,
                                                    key.framework)
        assert fresh.model_dump_json() == picked.model_dump_json()


def test_derived_range_is_refused_beyond_the_memory_limit(book):
    # issue 12: a saturated reference lets the slice law extrapolate in batch (derived-extrapolated), but
    # never past the memory limit
    limit = book.memory_limit("resnet50", "A100-SXM4-80GB", "1g.10gb")
    assert book.predict("resnet50", "A100-SXM4-80GB", "1g.10gb", 200).provenance == "derived-extrapolated"
    with pytest.raises(ProfileError, match="extrapolation is refused"):
        book.predict("resnet50", "A100-SXM4-80GB", "1g.10gb", limit + 1)


def test_cross_gpu_only_on_request(book):
    """With no points on the GPU, the answer is the estimator's unless a cross-GPU derivation is asked for."""
    assert book.predict("resnet50", "H100-SXM5-80GB", "full", 1).provenance == "estimated"
    p = book.predict("resnet50", "H100-SXM5-80GB", "1g.10gb", 1, cross_gpu=True)
    assert p.cross_gpu and p.provenance == "derived"


def test_bad_names_list_valid_choices(book):
    with pytest.raises(ProfileError, match="valid: full, 1g.5gb"):
        book.predict("resnet50", "A100-SXM4-40GB", "9g.99gb", 1)
    with pytest.raises(ProfileError, match="no latency points or cost table for model 'no-such-model'; models: "):
        book.predict("no-such-model", "A100-SXM4-40GB", "full", 1)
    with pytest.raises(ProfileError, match="precisions"):
        book.predict("resnet50", "T4-16GB", "full", 1, precision="int8")


def test_memory_limit(book):
    m = book.models.loc["vgg19"]
    limit = book.memory_limit("vgg19", "A100-SXM4-40GB", "1g.5gb")
    mem = book.memory_mb("A100-SXM4-40GB", "1g.5gb")
    assert m["weights_mb"] + limit * m["activation_mb_per_sample"] <= mem
    assert m["weights_mb"] + (limit + 1) * m["activation_mb_per_sample"] > mem
    assert book.memory_limit("bert-large", "A100-SXM4-40GB", "7g.40gb") > limit


def test_variable_length_interpolates_and_batch_costs_its_longest(book):
    lens = book.lengths("jasper", "A100-SXM4-80GB", "full", "fp16", "pytorch")
    assert len(lens) >= 2
    lo, hi = lens[0], lens[1]
    t_lo = book.predict("jasper", "A100-SXM4-80GB", "full", 4, input_len=lo).mean_s
    t_hi = book.predict("jasper", "A100-SXM4-80GB", "full", 4, input_len=hi).mean_s
    t_mid = book.predict("jasper", "A100-SXM4-80GB", "full", 4, input_len=(lo + hi) / 2).mean_s
    assert min(t_lo, t_hi) <= t_mid <= max(t_lo, t_hi)
    assert book.batch_time("jasper", "A100-SXM4-80GB", "full", [lo, hi, lo, lo]) == pytest.approx(t_hi)
    with pytest.raises(ProfileError, match="outside the profiled lengths"):
        book.predict("jasper", "A100-SXM4-80GB", "full", 4, input_len=lens[-1] + 30)


def test_knees_both_rules_on_store_curve(book):
    u = book.knee("resnet50", "A100-SXM4-80GB", "full", "utilization")
    c = book.knee("resnet50", "A100-SXM4-80GB", "full", "curve")
    assert u.rule == "utilization" and u.utilization >= 0.8 and u.threshold == 0.8
    assert c.rule == "curve" and c.threshold is None and c.time_s > 0
    one_g = book.knee("resnet50", "A100-SXM4-80GB", "1g.10gb", "utilization")
    assert one_g.batch < u.batch and one_g.provenance == "derived"
    with pytest.raises(ProfileError, match="valid: utilization, curve"):
        book.knee("resnet50", "A100-SXM4-80GB", "full", "elbow")


def test_unanswerable_curves_raise_profile_errors_that_say_why(store):
    from engine.profiles import ProfileBook, ProfileError

    book = ProfileBook.from_store(store)
    with pytest.raises(ProfileError, match="input_len is needed.*profiled lengths"):
        book.curve("bert-base", "T4-16GB", "full")
    with pytest.raises(ProfileError, match="cannot be derived from .*at least two batch sizes"):
        book.curve("alexnet", "V100-16GB", "mps:50")


def test_default_jitter_constants_agree():
    """One home for the 5 % jitter: its SCV (queueing) and log-sd (log-normal draws) are the cv's."""
    from engine.profiles.tails import (DEFAULT_CV, DEFAULT_SCV, DEFAULT_SIGMA, lognormal_quantile,
                                       lognormal_sigma_for_ratio, lognormal_sigmas_for_ratios)

    assert DEFAULT_SCV == pytest.approx(DEFAULT_CV ** 2, rel=1e-12)
    assert lognormal_sigma_for_ratio(1.0, 2.33) == DEFAULT_SIGMA == lognormal_sigma_for_ratio(1.5, 0.0)
    ratios = np.array([0.9, 1.0, 1.05, 1.3, 5.0])
    assert lognormal_sigmas_for_ratios(ratios, 2.33).tolist() == [lognormal_sigma_for_ratio(r, 2.33) for r in ratios]
    assert lognormal_quantile(2.0, DEFAULT_SCV, 0.99) == pytest.approx(2.0 * jitter_factor(99), rel=1e-12)
    assert lognormal_quantile(2.0, 0.0, 0.99) == 2.0


def test_percentile_key_names_quantiles_as_the_simulator_does():
    from engine.profiles.tails import percentile_key

    assert [percentile_key(q) for q in (0.5, 0.95, 0.99, 0.999, 0.9999)] == ["p50", "p95", "p99", "p99.9", "p99.99"]


def test_paris_and_the_profiles_share_the_utilisation_knee():
    """One utilisation-knee rule (engine.profiles.knee.reaches_knee) for the profiles' knees and PARIS's tables."""
    from engine.partition.paris import knee_from_table
    from engine.profiles.knee import reaches_knee

    batches, throughput = [1, 2, 4, 8, 16], [10.0, 19.0, 32.8, 40.0, 41.0]
    table = {batch: value / max(throughput) for batch, value in zip(batches, throughput)}
    for threshold in (0.5, 0.8, 0.97, 1.0):
        assert batches[knee_utilization(batches, throughput, threshold)] == knee_from_table(table, threshold)
    assert reaches_knee(0.8 - 1e-13, 0.8) and not reaches_knee(0.79, 0.8)
    assert knee_from_table({1: 0.5, 2: 0.6}, 0.9) is None
