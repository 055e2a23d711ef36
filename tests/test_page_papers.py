"""The Papers page (issue 14): one seed paper's headline results beside the engine's, with the summary."""

import pytest

from tests.pagetest import open_page


def test_papers_page_shows_the_chosen_papers_results():
    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("eif").run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    tenants = table[table["id"] == "eif-tenants"].iloc[0]
    # a column with gaps (not-modelled rows) is shown as its formatted text (ui.tables)
    assert float(tenants["paper"]) == 48 and float(tenants["Kneepoint"]) == 48 and tenants["sample"] == "in-sample"
    # vs CPU: no CPU time in the engine; vs GPU: computed from engine.fpga.compute and the GPU's curve
    assert (table[table["id"].str.startswith("eif-speedup-cpu")]["status"] == "not modelled").all()
    assert (table[table["id"].str.startswith("eif-speedup-gpu")]["status"] == "ok").all()
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["results"] == str(len(table)) and metrics["not modelled"] == "2"
    assert any("entries:" in c.value for c in at.caption)  # the summary line under the table


def test_papers_page_leaves_slow_entries_out_until_asked():
    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("paris-elsa").run()
    table = at.dataframe[0].value
    assert "slow, not run" in set(table["status"]) and "needs --simulate" in set(table["status"])
    assert float(table[table["id"] == "paris-fig8-small-share"].iloc[0]["Kneepoint"]) == 40


def _figure(at) -> dict:
    import json

    (chart,) = at.get("plotly_chart")
    return json.loads(chart.proto.spec)


def test_the_chart_plots_each_computed_result_as_a_ratio_with_the_band(store):
    from engine.analytic import Context
    from engine.reproduce.runner import run

    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("gpu-primitives").run()
    table = at.dataframe[0].value
    fig = _figure(at)
    computed = [r for r in run(Context.from_store(store), paper="gpu-primitives", include_slow=False)
                if r.status == "ok"]
    points = {y: x for trace in fig["data"] for x, y in zip(trace["x"], trace["y"])}
    assert len(points) == sum(len(t["x"]) for t in fig["data"]) == len(computed) > 0  # not-modelled rows: no point
    for r in computed:  # every point is the runner's Kneepoint over the paper's value
        assert points[r.id] == pytest.approx(r.kneepoint / r.paper_value)
    assert {t["name"] for t in fig["data"]} == {"out of sample (predicted)", "in sample (fitted on that figure)"}
    (band,) = [s for s in fig["layout"]["shapes"] if s["type"] == "rect"]
    assert (band["x0"], band["x1"]) == (0.75, 1.25)
    assert fig["layout"]["xaxis"]["type"] == "log" and "log scale" in fig["layout"]["xaxis"]["title"]["text"]
    listed = {a["y"]: a["text"] for a in fig["layout"]["annotations"]}  # listed with the reason, not plotted
    assert listed == {"prim-synclite-alexnet": "not modelled", "prim-batchlatency-recog": "not modelled"}
    assert fig["layout"]["yaxis"]["categoryarray"] == list(table["id"])


def test_a_result_from_one_design_links_to_that_design():
    from urllib.parse import parse_qs

    from engine.io.urlstate import decode
    from engine.reproduce.registry import entries
    from engine.scenario import load_scenario
    from tests.conftest import ROOT

    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("preba").run()
    entry = next(e for e in entries("preba") if e.design is not None)
    (link,) = _links(at, "design")
    assert link.proto.label.startswith(entry.id)
    token = parse_qs(link.proto.query_string)["s"][0]
    assert load_scenario(decode(token)) == load_scenario(entry.design)
    at.query_params["s"] = token  # the link opens the Design page on that scenario
    at.switch_page(str(ROOT / "pages" / "design.py")).run()
    assert not at.exception, at.exception
    assert at.session_state["d_model"] == entry.design["model"] == "citrinet"
    at.switch_page(str(ROOT / "pages" / "papers.py")).run()
    at.selectbox(key="pap_paper").set_value("eif").run()
    assert not _links(at, "design")  # no EIF result comes from one design


def _links(at, page: str) -> list:
    return [link for link in at.get("page_link") if page in link.proto.page]


def test_a_papers_compare_preset_opens_on_compare_with_its_designs(store):
    """The presets are the registry's own scenarios (issue 14): the link carries exactly the preset's designs."""
    from urllib.parse import parse_qs

    from engine.analytic import Context
    from engine.io.urlstate import decode_many
    from engine.reproduce.registry import build_preset, presets_of
    from engine.scenario import load_scenario
    from tests.conftest import ROOT

    at = open_page("papers.py")
    at.selectbox(key="pap_paper").set_value("gpu-primitives").run()
    assert not at.exception, at.exception
    (link,) = _links(at, "compare")
    (preset,) = presets_of("gpu-primitives").values()
    assert link.proto.label == preset.name
    token = parse_qs(link.proto.query_string)["c"][0]
    ctx = Context.from_store(store)
    assert [load_scenario(d) for d in decode_many(token)] == [load_scenario(d, ctx.book)
                                                             for d in build_preset("gpu-primitives", ctx)]
    at.query_params["c"] = token
    at.switch_page(str(ROOT / "pages" / "compare.py")).run()
    assert not at.exception, at.exception
    assert list(at.table[1].value.columns) == [d["name"] for d in build_preset("gpu-primitives", ctx)]


def test_every_paper_shows_without_an_exception():
    from engine.seed.papers import PAPERS

    at = open_page("papers.py")
    for paper in PAPERS:
        at.selectbox(key="pap_paper").set_value(paper).run()
        assert not at.exception, (paper, at.exception)
        assert len(at.get("plotly_chart")) == 1, paper


def test_chart_lists_a_result_off_the_log_axis_without_a_point():
    from engine.charts.papers import reproduction_chart
    from engine.reproduce.runner import ReproductionRow

    common = dict(paper="x", where="Fig 1", quantity="q", unit="x", within=False, sample="out-of-sample",
                  mechanism="m", scenario="s", fitted_on=())
    rows = [ReproductionRow(id="a", paper_value=2.0, kneepoint=1.0, rel_error=-0.5, status="ok", **common),
            ReproductionRow(id="b", paper_value=2.0, kneepoint=-1.0, rel_error=-1.5, status="ok", **common)]
    fig = reproduction_chart(rows)
    assert [list(t.x) for t in fig.data] == [[0.5]]
    assert [(a.y, a.text) for a in fig.layout.annotations] == [("b", "ratio not positive: off the log axis")]
