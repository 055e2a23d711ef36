"""The Partitioning page under AppTest, and engine.studies.partitioning under it."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.analytic import Context
from engine.studies.partitioning import partitioning_study, seed_like_scenario, simulate_study
from engine.scenario import load_scenario
from engine.io.urlstate import decode_view
from tests.conftest import ROOT

APP = str(ROOT / "app.py")
PAGE = str(ROOT / "pages" / "partitioning.py")


@pytest.fixture
def page():
    at = AppTest.from_file(APP, default_timeout=240)
    at.switch_page(PAGE).run()
    assert not at.exception, at.exception
    return at


def _table(at):
    return next(d.value for d in at.dataframe if "policy" in d.value.columns)


def test_defaults_plan_every_policy(page):
    t = _table(page)
    assert set(t["policy"]) == {"gpu1", "gpu2", "gpu3", "gpu4", "gpu7", "gpu-max", "random", "paris"}
    assert len(page.get("plotly_chart")) == 3  # batch PDF, bounded throughput, packed layouts
    m = {x.label: x.value for x in page.metric}
    assert m["SLA"].startswith("p95")
    assert any(md.value.startswith("**PARIS partition**") and "x 1g" in md.value for md in page.markdown)
    token = page.query_params["p"]
    assert decode_view(token[0] if isinstance(token, list) else token)["par_count"] == 4  # the seed's four-A100 server


def test_defaults_show_the_seeds_case_with_paris_winning(page):
    """The seed's own case opens simulated: PARIS with ELSA carries a non-zero rate and beats every baseline."""
    t = _table(page).set_index("policy")
    assert t.loc["paris", "GPCs used"] == 24 and t.loc["gpu-max", "GPCs used"] <= 24
    assert t.loc["paris", "ELSA simulated (req/s)"] > max(t.loc[p, col] for p in ("gpu-max", "random")
                                                          for col in ("FIFS simulated (req/s)", "ELSA simulated (req/s)"))
    (said,) = [s.value for s in page.success]
    assert said.startswith("PARIS wins: PARIS + ELSA carries") and "the best baseline (GPU(max) + FIFS" in said


def test_a_baseline_that_wins_is_named(page):
    for key, value in (("par_mu", 1.0), ("par_sigma", 1.0)):  # a narrower spread: random's mix serves it better
        page.number_input(key=key).set_value(value).run()
    (said,) = [i.value for i in page.info]  # before simulating: the analytic FIFS rates, and why PARIS reads 0
    assert said.startswith("Analytically, under first-idle-first-served (FIFS), PARIS carries 0 req/s")
    page.button(key="par_sim").click().run()
    assert not page.exception, page.exception
    (said,) = [w.value for w in page.warning]
    assert said.startswith("A baseline wins here: random + ELSA carries") and not page.success


@pytest.mark.parametrize("key,value,kind", [("par_model", "efficientnet-b0", "selectbox"),
                                            ("par_gpu", "A100-SXM4-40GB", "selectbox"),
                                            ("par_count", 2, "number_input"), ("par_gpcs", 10, "number_input"),
                                            ("par_sigma", 1.5, "number_input"), ("par_sla", 8.0, "number_input"),
                                            ("par_show", "gpu-max", "selectbox")])
def test_each_widget_reruns(page, key, value, kind):
    getattr(page, kind)(key=key).set_value(value).run()
    assert not page.exception, page.exception
    assert not page.error, [e.value for e in page.error]


def test_table_distribution_and_a_bad_one(page):
    page.radio(key="par_dist").set_value("table").run()
    assert not page.exception and not page.error
    page.text_input(key="par_table").set_value("1:0.5, two:0.5").run()
    assert not page.exception and any("not valid" in e.value for e in page.error)
    message = next(e.value for e in page.error if "not valid" in e.value)
    assert "workload.query_size.table" in message and "validation error for" not in message  # names the field


def test_simulation_adds_fifs_and_elsa(page):
    page.number_input(key="par_n").set_value(2000).run()
    page.button(key="par_sim").click().run()
    assert not page.exception, page.exception
    t = _table(page)
    assert {"FIFS simulated (req/s)", "ELSA simulated (req/s)"} <= set(t.columns)
    # a column with gaps (policies not simulated) is shown as text, so its blanks are blank: read the number back
    assert float(t.set_index("policy").loc["paris", "ELSA simulated (req/s)"].replace(",", "")) >= 0


def test_link_round_trip_and_reset(page):
    page.number_input(key="par_count").set_value(2).run()
    token = page.query_params["p"]
    fresh = AppTest.from_file(APP, default_timeout=240)
    fresh.query_params["p"] = token[0] if isinstance(token, list) else token
    fresh.switch_page(PAGE).run()
    assert not fresh.exception and fresh.number_input(key="par_count").value == 2
    assert "ELSA simulated (req/s)" not in _table(fresh).columns  # a link's own inputs wait for the button
    fresh.button(key="par_reset").click().run()
    assert fresh.number_input(key="par_count").value == 4


def test_study_rates_every_policy_and_simulates_on_request(store):
    ctx = Context.from_store(store)
    base = load_scenario(seed_like_scenario(ctx.book, "resnet50", "A100-SXM4-80GB", 2,
                                            {"kind": "lognormal", "mu": 1.0, "sigma": 1.0, "max_size": 16}), ctx.book)
    study = partitioning_study(base, ctx)
    by = {r.policy: r for r in study.rows}
    assert by["gpu-max"].bounded_fifs_rps == max(by[p].bounded_fifs_rps for p in ("gpu1", "gpu2", "gpu3", "gpu4",
                                                                                   "gpu7"))
    assert abs(sum(study.dist.values()) - 1) < 1e-9 and study.paris is not None
    calls = []
    sim = simulate_study(study, ctx, policies=("gpu-max",), n_requests=2000, progress=calls.append)
    assert [s.scheduler for s in sim] == ["fifs", "elsa"] and calls[-1] == 1.0
    assert all(0 <= s.bounded_rps < s.capacity_rps for s in sim)


def test_the_verdict_names_the_winner_in_words():
    from engine.studies.partitioning import PartitionVerdict, policy_label

    assert [policy_label(p) for p in ("gpu3", "gpu-max", "random", "paris")] == ["GPU(3)", "GPU(max)", "random", "PARIS"]
    wins = PartitionVerdict(simulated=True, paris_rps=6000, paris_scheduler="elsa", baseline="gpu-max",
                            baseline_scheduler="fifs", baseline_rps=4000)
    assert wins.explain() == ("PARIS wins: PARIS + ELSA carries 6,000 req/s within the SLA, 1.50x the best baseline "
                              "(GPU(max) + FIFS, 4,000 req/s).")
    loses = wins.model_copy(update={"baseline": "random", "baseline_scheduler": "elsa", "baseline_rps": 7500})
    assert not loses.paris_wins and loses.explain().startswith("A baseline wins here: random + ELSA carries 7,500")
