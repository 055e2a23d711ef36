"""PARIS (PARIS/ELSA seed, Sec IV-B, Algorithm 1): knees, ranges, ratios, GPC scaling and rounding."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cli.main import main
from engine.partition.paris import (MAX_BATCH, THRESHOLD, ParisError, ParisInput, lognormal_pdf, paris,
                                    paris_input_from_book, round_instances)

SEED = "PARIS-ELSA seed"


def _figures(store, source_part: str, **match):
    df = store.table("rpc_figures")
    df = df[df["source"].str.startswith(SEED) & df["source"].str.contains(source_part, regex=False)]
    for col, val in match.items():
        df = df[df[col] == val]
    return df


def _one(store, source_part: str, **match) -> float:
    df = _figures(store, source_part, **match)
    assert len(df) == 1, f"expected one rpc_figures row for {match}, got {len(df)}"
    return float(df["value"].iloc[0])


# The Fig 8 example: Dist, the small GPU's throughputs and both knees are in the text (rows in
# rpc_figures.csv). The large GPU's throughputs (batch 3 and 4) are only in Fig 8(b); 30 and 20
# queries/s are chosen here, giving 40/30 + 20/20 = 2.33 large GPUs per 100 queries, which the
# text reports to one decimal as 2.3.
LARGE_QPS = {3: 30.0, 4: 20.0}


def _fig8(store, unit: str = "queries/s") -> dict:
    fig = "Fig 8 example"
    dist = {b: _one(store, fig, item="batch-size PDF", setting=f"batch {b}") / 100 for b in (1, 2, 3, 4)}
    small = {b: _one(store, fig, item="small GPU effective throughput", setting=f"batch {b}") for b in (1, 2)}
    knees = {"small": int(_one(store, fig, item="MaxBatch_knee", setting="small GPU")),
             "large": int(_one(store, fig, item="MaxBatch_knee", setting="large GPU"))}
    tput = {"small": small, "large": dict(LARGE_QPS)}
    if unit == "items/s":
        tput = {k: {b: q * b for b, q in row.items()} for k, row in tput.items()}
    return {"dist": dist, "throughput": tput, "throughput_unit": unit, "knees": knees,
            "gpcs": {"small": 1, "large": 2}, "total_gpcs": 14}


@pytest.mark.parametrize("unit", ["queries/s", "items/s"])
def test_figure_8_example_gives_the_published_ratio(store, unit):
    res = paris(_fig8(store, unit))
    per_100 = {k: 100 * r for k, r in res.ratio.items()}  # the text counts instances per 100 queries
    small = _one(store, "Fig 8 example", item="instances needed", setting="small GPU, 100 queries")
    large = _one(store, "Fig 8 example", item="instances needed", setting="large GPU, 100 queries")
    assert per_100["small"] == pytest.approx(small, rel=1e-12)
    assert round(per_100["large"], 1) == large
    assert res.ranges == {"small": (1, 2), "large": (3, 4)}
    # Step C: N_k = C R_k keeps the 1.5 : 2.3 ratio and spends exactly the GPC budget
    assert res.instances["small"] / res.instances["large"] == pytest.approx(per_100["small"] / per_100["large"])
    assert sum(res.instances[k] * g for k, g in {"small": 1, "large": 2}.items()) == pytest.approx(14)


def test_defaults_are_the_seed_figures(store):
    assert THRESHOLD == _one(store, "Algorithm 1", item="MaxBatch_knee utilisation threshold")
    assert MAX_BATCH == _one(store, "Sec V", item="log-normal batch sizes, largest batch")
    assert ParisInput.model_fields["threshold"].default == THRESHOLD


def test_knee_is_the_smallest_batch_reaching_the_threshold():
    util = {"a": {1: 0.3, 2: 0.79, 4: 0.81, 8: 0.95}, "b": {1: 0.85, 2: 0.9}}
    res = paris({"dist": {1: 1, 2: 1, 3: 1, 4: 1}, "throughput": {"a": {b: 10.0 for b in (1, 2, 3, 4)},
                                                                "b": {b: 10.0 for b in (1, 2, 3, 4)}},
                 "utilization": util, "gpcs": {"a": 1, "b": 3}, "total_gpcs": 7})
    assert res.knees == {"a": 4, "b": 1} and res.knee_source == "utilization"
    # b's knee is below a's, and a's range already reaches the largest batch: b's range is empty
    assert res.ranges == {"a": (1, 4), "b": None}
    assert any("not above" in n for n in res.notes)


def test_knee_from_throughput_when_no_utilisation_is_given():
    items = {1: 10.0, 2: 18.0, 4: 30.0, 8: 36.0, 16: 40.0}  # items/s; 0.8 x 40 = 32 first met at 8
    res = paris({"dist": {b: 1 for b in items}, "throughput": {"g": items}, "throughput_unit": "items/s",
                 "gpcs": {"g": 1}, "total_gpcs": 7})
    assert res.knees == {"g": 8} and res.knee_source == "throughput"
    assert res.ranges == {"g": (1, 16)}  # the only (largest) partition takes every batch
    assert res.instances_rounded == {"g": 7}


def test_knees_match_the_profile_books_utilisation_rule(store):
    from engine.profiles import ProfileBook

    book = ProfileBook.from_store(store)
    sku, parts = "A100-SXM4-80GB", ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    inp = paris_input_from_book(book, "resnet50", sku, parts, lognormal_pdf(1.0, 1.0), 28)
    res = paris(inp)
    for k in parts:
        knee = book.knee("resnet50", sku, k, "utilization", threshold=THRESHOLD).batch
        if knee <= MAX_BATCH:
            assert res.knees[k] == knee
        q = book.predict("resnet50", sku, k, 4)
        assert inp.throughput[k][4] == pytest.approx(1 / q.mean_s)  # queries/s = (b / mean) / b
    assert res.order == parts  # ascending GPCs
    assert sum(res.instances_rounded[k] * inp.gpcs[k] for k in parts) <= 28


@pytest.mark.parametrize("data, field", [
    ({"dist": {}}, "dist"),
    ({"dist": {1: -0.1, 2: 1.0}}, "dist"),
    ({"dist": {0: 1.0}}, "dist"),
    ({"dist": {1: 0.0}}, "dist"),
    ({"throughput": {"a": {1: 0.0}}}, "throughput"),
    ({"gpcs": {"a": 1, "b": 2}}, "gpcs"),
    ({"knees": {"a": 1}, "utilization": {"a": {1: 0.9}}}, "not both"),
    ({"utilization": {"a": {1: 1.5}}}, "utilization[a][1]"),
    ({"total_gpcs": 0}, "total_gpcs"),
    ({"threshold": 1.2}, "threshold"),
])
def test_bad_input_names_the_field(data, field):
    good = {"dist": {1: 1.0}, "throughput": {"a": {1: 5.0}}, "gpcs": {"a": 1}, "total_gpcs": 7}
    with pytest.raises(ParisError, match=field.replace("[", r"\[").replace("]", r"\]")):
        paris({**good, **data})


def test_a_batch_without_throughput_in_its_range_is_named():
    with pytest.raises(ParisError, match=r"throughput\.big: no value for batch 3"):
        paris({"dist": {1: 1, 3: 1}, "throughput": {"small": {1: 9.0}, "big": {2: 9.0}},
               "knees": {"small": 1, "big": 4}, "gpcs": {"small": 1, "big": 7}, "total_gpcs": 14})


# --------------------------------------------------------------------------- properties

_parts = st.lists(st.integers(1, 7), min_size=1, max_size=5, unique=True)


@st.composite
def paris_inputs(draw):
    sizes = draw(_parts)
    top = draw(st.integers(1, 12))
    dist = {b: draw(st.floats(0, 1)) for b in range(1, top + 1)}
    if sum(dist.values()) <= 0:
        dist[1] = 1.0
    tput = {f"p{s}": {b: draw(st.floats(0.1, 1e4)) for b in range(1, top + 1)} for s in sizes}
    return {"dist": dist, "throughput": tput, "gpcs": {f"p{s}": s for s in sizes},
            "total_gpcs": draw(st.integers(1, 64))}


@settings(max_examples=150, deadline=None)
@given(paris_inputs())
def test_ranges_partition_the_batches_and_the_budget_holds(data):
    res = paris(data)
    covered = [b for k in res.order if res.ranges[k] for b in range(res.ranges[k][0], res.ranges[k][1] + 1)]
    assert covered == list(range(1, max(data["dist"]) + 1))  # disjoint, in partition order, complete
    gpcs = data["gpcs"]
    assert sum(res.instances[k] * gpcs[k] for k in res.order) == pytest.approx(data["total_gpcs"])
    assert res.gpcs_used == sum(res.instances_rounded[k] * gpcs[k] for k in res.order) <= data["total_gpcs"]


@settings(max_examples=100, deadline=None)
@given(paris_inputs(), st.floats(0.01, 100))
def test_instances_do_not_depend_on_the_throughput_unit_scale(data, c):
    scaled = {**data, "throughput": {k: {b: t * c for b, t in row.items()} for k, row in data["throughput"].items()}}
    a, b = paris(data), paris(scaled)
    assert a.knees == b.knees
    for k in a.order:
        assert a.instances[k] == pytest.approx(b.instances[k], rel=1e-9, abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from("abcde"), st.floats(0, 30), min_size=1),
       st.dictionaries(st.sampled_from("abcde"), st.integers(1, 7), min_size=5), st.integers(1, 80))
def test_rounding_keeps_the_budget_and_fills_it(weights, gpcs, total):
    need = sum(w * gpcs[k] for k, w in weights.items())
    instances = {k: (w * total / need if need > 0 else 0.0) for k, w in weights.items()}  # as Step C makes them
    n = round_instances(instances, gpcs, total)
    used = sum(n[k] * gpcs[k] for k in n)
    assert used <= total
    live = [k for k, v in instances.items() if v > 0]
    if live:
        assert total - used < min(gpcs[k] for k in live)  # nothing more fits
    for k, v in instances.items():
        assert n[k] >= math.floor(v + 1e-9)
        if v == 0:
            assert n[k] == 0


def test_rounding_refuses_instances_over_the_budget():
    with pytest.raises(ParisError, match="more than total_gpcs"):
        round_instances({"a": 3.0}, {"a": 2}, 5)


@settings(max_examples=100, deadline=None)
@given(st.floats(-1, 4), st.floats(0.1, 2.5), st.integers(1, 64))
def test_lognormal_pdf_is_the_engines_query_size_distribution(mu, sigma, top):
    from engine.analytic.lengths import query_size_pmf
    from engine.scenario import ScenarioError, load_scenario

    try:
        sc = load_scenario({"model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB"},
                            "workload": {"query_size": {"kind": "lognormal", "mu": mu, "sigma": sigma,
                                                        "max_size": top}}})
    except ScenarioError as e:  # (almost) no mass on 1..top: the scenario refuses it up front, before any NaN
        assert "puts no queries in" in str(e)
        return
    with np.errstate(invalid="ignore"):
        pmf = query_size_pmf(sc)
    if not np.all(np.isfinite(pmf)):  # no mass on 1..top in floating point: refused, not NaN
        with pytest.raises(ParisError, match="no mass"):
            lognormal_pdf(mu, sigma, top)
        return
    pdf = lognormal_pdf(mu, sigma, top)
    assert list(pdf) == list(range(1, top + 1))
    assert sum(pdf.values()) == pytest.approx(1.0)
    assert [pdf[b] for b in pdf] == pytest.approx(list(pmf), abs=1e-12)


def test_lognormal_pdf_rejects_bad_parameters():
    with pytest.raises(ParisError, match="sigma"):
        lognormal_pdf(1.0, 0.0)
    with pytest.raises(ParisError, match="max_batch"):
        lognormal_pdf(1.0, 1.0, 0)


# --------------------------------------------------------------------------- CLI


def test_cli_paris_json_and_text(store, tmp_path, capsys):
    path = tmp_path / "fig8.json"
    path.write_text(json.dumps(_fig8(store)))
    assert main(["partition", "paris", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"ratio", "instances", "instances_rounded", "knees", "ranges"}
    assert 100 * out["ratio"]["small"] == pytest.approx(_one(store, "Fig 8", setting="small GPU, 100 queries"))
    assert sum(out["instances_rounded"][k] * g for k, g in {"small": 1, "large": 2}.items()) <= 14
    assert main(["partition", "paris", str(path)]) == 0
    text = capsys.readouterr().out
    assert "small" in text and "GPCs:" in text


def test_cli_paris_bad_input_is_one_line(tmp_path, capsys):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"dist": {"1": -1}, "throughput": {"a": {"1": 1}}, "gpcs": {"a": 1},
                                "total_gpcs": 7}))
    assert main(["partition", "paris", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dist" in err and "Traceback" not in err
    path.write_text("{not json")
    assert main(["partition", "paris", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err
