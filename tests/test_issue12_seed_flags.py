"""Issue 12 item 6: seed rows whose p99 is below the mean, and curves whose throughput falls at the largest batch,
are flagged in the store and never used silently (tails set aside, never a knee)."""

import pandas as pd
import pytest

from engine.profiles import ProfileBook
from engine.profiles.curves import THROUGHPUT_FALLS, TAIL_BELOW_MEAN, point_flags
from engine.studies.profiles import compare_partitions
from tests.conftest import SEED


@pytest.fixture(scope="module")
def book(store):
    return ProfileBook.from_store(store)


def _series(store, model, sku, precision, framework):
    p = store.latency_points(model=[model], sku=[sku])
    return p[(p["partition"] == "full") & (p["precision"] == precision) & (p["framework"] == framework)]


def test_the_store_carries_the_flags_in_the_rows_notes(store):
    bert = _series(store, "bert-large", "A100-SXM4-40GB", "fp16", "tensorflow1")
    assert len(bert) and bert["note"].str.contains("FLAGGED: " + TAIL_BELOW_MEAN).all()
    rn50 = _series(store, "resnet50", "A100-SXM4-40GB", "amp", "tensorflow1")
    assert rn50["note"].str.contains(THROUGHPUT_FALLS).all()
    clean = _series(store, "resnet50", "A100-SXM4-80GB", "fp16", "paddle-tensorrt")
    assert not clean["note"].str.contains("FLAGGED").any()


def test_committed_seed_flags_match_the_engines_checks():
    df = pd.read_csv(SEED / "latency_points.csv", keep_default_na=False, na_values={"input_len": [""]})
    for c in ("mean_ms", "p99_ms"):
        df[c] = pd.to_numeric(df[c].replace("", None))
    for _, g in df.groupby(["model", "sku", "partition", "precision", "framework", "input_len"], dropna=False):
        flagged = g["note"].str.contains("FLAGGED").all()
        assert flagged == bool(point_flags(g)), g[["model", "sku", "framework"]].iloc[0].to_dict()


def test_published_tails_below_the_mean_are_set_aside(book):
    c = book.curve("bert-large", "A100-SXM4-40GB", "full", "fp16", "tensorflow1", input_len=384.0)
    assert TAIL_BELOW_MEAN in c.flags and 99 not in c.tails_s  # before: p99 45 ms against a 61 ms mean
    assert all(c.tail([1, 2, 4, 8], 99) > c.mean([1, 2, 4, 8]))
    assert c.tail_source(99).startswith("jitter model")


def test_a_falling_largest_batch_is_never_the_knee(book):
    c = book.curve("resnet50", "A100-SXM4-40GB", "full", "amp", "tensorflow1")
    assert c.falling_top and THROUGHPUT_FALLS in c.flags and c.max_batch == 256
    for rule in ("utilization", "curve"):
        k = book.knee("resnet50", "A100-SXM4-40GB", "full", rule, precision="amp", framework="tensorflow1")
        assert k.batch < 256


def test_the_profiles_view_shows_the_flags(book):
    v = compare_partitions(book, "resnet50", "A100-SXM4-40GB", ["full"], precision="amp")
    row = v.summary.iloc[0]
    if row["framework"] == "tensorflow1":
        assert THROUGHPUT_FALLS in row["data_flags"]
    assert "data_flags" in v.summary.columns
