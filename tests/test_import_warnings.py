"""A model name the app does not know is imported as a new model, with a warning naming the closest known names
(engine, CLI and the Profiles page)."""

from __future__ import annotations

import argparse

import pytest
from streamlit.testing.v1 import AppTest

from engine.cli import import_export as cli_io
from engine.io.exporters import csv_bytes
from engine.io.importers import MAX_MODEL_WARNINGS, import_file, import_perf_analyzer, import_upload
from engine.seed.records import LatencyPointRow
from engine.store import Store
from tests.test_hosting import APP, PROFILES, _csv
from tests.test_importers import PA, PERF
from tests.pagetest import open_profiles_tab


@pytest.fixture
def store(tmp_path):
    s = Store(tmp_path / "k.duckdb")
    yield s
    s.close()


def _points(*models: str) -> bytes:
    rows = [LatencyPointRow(model=m, sku="A100-SXM4-40GB", partition="full", precision="fp16", framework="trt",
                            batch=1, mean_ms=2.0, throughput=500.0, kind="measured", source="bench run")
            for m in models]
    return csv_bytes(rows, LatencyPointRow)


def test_a_misspelt_model_is_imported_with_a_warning_naming_the_closest_names(store):
    result = import_perf_analyzer(store, PERF.encode(), name="perf.csv", **PA | {"model": "resnet5O"})
    (warning,) = result.warnings
    assert warning.startswith("model 'resnet5O' is not in the model catalogue, so it was imported as a new model")
    assert "did you mean resnet50" in warning
    assert store.user_counts()["load_points"] == 4  # still imported: a new model is legitimate


def test_a_known_model_and_a_second_file_of_a_new_one_do_not_warn(store):
    assert import_perf_analyzer(store, PERF.encode(), name="perf.csv", **PA).warnings == []
    first = import_file(store, _points("my-detector"), name="latency_points.csv")
    assert len(first.warnings) == 1 and "did you mean" not in first.warnings[0]  # nothing close: just new
    again = _points("my-detector").replace(b",1,,", b",2,,")  # batch 2 of the same model
    assert import_file(store, again, name="latency_points.csv").warnings == []


def test_a_file_of_many_unknown_models_warns_a_few_lines(store):
    names = [f"custom-model-{i}" for i in range(MAX_MODEL_WARNINGS + 7)]
    result = import_file(store, _points(*names), name="latency_points.csv")
    assert len(result.warnings) == MAX_MODEL_WARNINGS + 1
    assert result.warnings[-1] == "... and 7 more model names not in the catalogue"


def test_the_cli_prints_the_warning_and_succeeds(store, tmp_path, capsys):
    parser = argparse.ArgumentParser(prog="engine")
    cli_io.register(parser.add_subparsers(dest="command", required=True))
    path = tmp_path / "latency_points.csv"
    path.write_bytes(_points("bert-larg"))
    args = parser.parse_args(["import", "csv", str(path)])
    assert args.func(args, store=store) == 0
    out, err = capsys.readouterr()
    assert out == "added 1 latency_points from latency_points.csv\n"
    assert err.startswith("warning: model 'bert-larg' is not in the model catalogue") and "bert-large" in err


def test_the_profiles_page_shows_the_warning(monkeypatch):
    monkeypatch.setenv("KNEEPOINT_HOSTED", "1")  # the upload stays in this test's session
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page(PROFILES).run()
    open_profiles_tab(at, "Import and export")
    at.radio(key="imp_format").set_value("csv").run()
    at.selectbox(key="imp_table").set_value("latency_points").run()
    at.file_uploader(key="imp_file").set_value(("typo.csv", _csv("resnet5O"), "text/csv")).run()
    at.button(key="imp_go").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Added 1 latency_points from typo.csv."]
    (warning,) = [w.value for w in at.warning]
    assert warning.startswith("Model 'resnet5O' is not in the model catalogue") and "resnet50" in warning


def test_an_upload_names_the_new_model_too(store):
    result = import_upload(store, "csv", _csv("resnet-5O"), "u.csv", {"table": "latency_points"})
    assert result.counts() == {"latency_points": 1} and "did you mean resnet50" in result.warnings[0]
