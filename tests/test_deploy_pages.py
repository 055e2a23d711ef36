"""Page parts of issue 20: the Search page's sizing panel and the deployment zip on the Design and Report pages."""

from __future__ import annotations

import io
import json
import zipfile

from engine.analytic import Context
from engine.deploy.export import export_design, zip_bytes
from engine.deploy.sizing import size
from engine.scenario import load_scenario
from engine.io.urlstate import encode
from tests.pagetest import open_page

DPU = {"name": "dpu design", "model": "resnet50", "gpu": {"sku": "A100-SXM4-80GB", "layout": ["1g.10gb"] * 7},
       "preprocessing": {"device": "dpu"}, "batching": {"policy": "preba"}, "workload": {"sla": {"latency_ms": 15}}}


def _link() -> dict:
    return {"s": encode(load_scenario(DPU))}


def _download(at, key: str):
    return next(e for e in at.get("download_button") if e.proto.id.endswith(key) or key in e.proto.id)


def test_search_sizing_panel_ranks_types_and_shows_the_simulators_verdict(store):
    at = open_page("search.py", _link())
    at.number_input(key="srch_size_rate").set_value(4000.0).run()
    at.multiselect(key="srch_size_gpus").set_value(["A100-SXM4-80GB", "H100-SXM5-80GB"]).run()
    at.button(key="srch_size_run").click().run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    expected = size(DPU, Context.from_store(store), 4000.0, ["A100-SXM4-80GB", "H100-SXM5-80GB"], confirm=False)
    assert list(table["GPU type"]) == [a.sku for a in expected.answers]
    assert list(table["answer"]) == [a.status for a in expected.answers]
    assert int(table["GPUs"].iloc[0]) == expected.answers[0].gpus
    assert "TCO (USD)" in table.columns and "host cores per server" in table.columns
    verdicts = [x.value for x in at.success] + [x.value for x in at.warning]
    assert any(v.startswith("Simulator on one A100-SXM4-80GB server") for v in verdicts)
    assert any("srch_size_deploy" in e.proto.id for e in at.get("download_button"))  # the winner, ready to deploy


def test_design_page_offers_the_deployment_zip_of_the_design(store):
    at = open_page("design.py", _link())
    button = _download(at, "d_dl_deploy")
    assert "dpu design" in button.label
    data = zip_bytes(export_design(json.dumps(DPU), Context.from_store(store)))
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert "mig-parted/config.yaml" in z.namelist()


def test_design_page_says_why_a_design_has_no_deployment():
    at = open_page("design.py")  # the default design misses its SLA at any load (CPU-bound)
    assert any(c.value.startswith("No deployment files for") and "no load meets" in c.value for c in at.caption)
    assert not any("d_dl_deploy" in e.proto.id for e in at.get("download_button"))


def test_report_page_offers_a_deployment_zip_per_design():
    at = open_page("report.py", _link())
    assert any("rep_dl_deploy_0" in e.proto.id for e in at.get("download_button"))
