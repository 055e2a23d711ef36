"""Issue 12 item 4: the slice law extrapolates in batch past a saturated reference, labelled, within memory."""

import math

import pytest

from engine.profiles import ProfileBook, ProfileError
from engine.profiles.slicelaw import extrapolation_uncertainty, fit_slice_law, is_saturated

SKU = "A100-SXM4-80GB"


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def test_bert_large_on_a_1g_slice_answers_useful_batches_labelled_extrapolated(book):
    # the law's support is reference max batch (8) x SM share (14/108) = 1; before, batch 2 was refused
    p = book.predict("bert-large", SKU, "1g.10gb", 8, input_len=384)
    assert p.provenance == "derived-extrapolated" and p.extrapolated
    assert 0 < p.extrapolation_rel_uncertainty < 0.2
    one = book.predict("bert-large", SKU, "1g.10gb", 1, input_len=384)
    assert one.provenance == "derived" and not one.extrapolated
    assert p.throughput > one.throughput  # a useful batch: the slice amortises its fixed time


def test_extrapolation_stops_at_the_memory_limit(book):
    limit = book.memory_limit("bert-large", SKU, "1g.10gb", 384)
    assert book.predict("bert-large", SKU, "1g.10gb", limit, input_len=384).extrapolated
    with pytest.raises(ProfileError, match="refused"):
        book.predict("bert-large", SKU, "1g.10gb", limit + 1, input_len=384)


def test_knee_stays_on_the_laws_support(book):
    knee = book.knee("bert-large", SKU, "1g.10gb", input_len=384)
    assert knee.batch == 1 and knee.provenance == "derived"


def test_an_unsaturated_reference_is_not_extrapolated():
    # throughput still climbing steeply at the top: the marginal cost per item is far from the fitted slope
    batches, lat = [1, 2, 4, 8], [0.010, 0.0101, 0.0102, 0.0130]
    fit = fit_slice_law(batches, lat)
    assert not is_saturated(fit, batches, lat)
    linear = [0.002 + b * 0.001 for b in batches]
    fit2 = fit_slice_law(batches, linear)
    assert is_saturated(fit2, batches, linear)
    assert math.isclose(extrapolation_uncertainty(fit2, batches, linear), 0.0, abs_tol=1e-9)


def test_a_partition_is_labelled_extrapolated_only_when_its_batches_are(store):
    from engine.analytic import Context, evaluate

    ctx = Context.from_store(store)
    base = {"model": "bert-large", "gpu": {"sku": SKU, "layout": ["1g.10gb"] * 7}, "preprocessing": {"device": "none"}}
    at_knee = evaluate(base, ctx).partitions[0]
    assert at_knee.batch_max == 1 and at_knee.provenance == "derived"
    big = evaluate({**base, "batching": {"policy": "fixed", "max_batch": 4}}, ctx).partitions[0]
    assert big.batch_max == 4 and big.provenance == "derived-extrapolated"
