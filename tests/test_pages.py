"""Every page under streamlit.testing.v1.AppTest: renders, reacts to widgets, explains bad input."""

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


@pytest.fixture
def app():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def test_app_shows_store_in_sidebar(app):
    text = " ".join(c.value for c in app.sidebar.code)
    assert "duckdb" in text
    counts = app.sidebar.dataframe[0].value
    assert set(counts["table"]) >= {"gpus", "latency_points", "mig_profiles"}
    assert (counts["rows"] > 0).all()


def test_profiles_page_defaults(app):
    assert app.title[0].value == "Latency profiles"
    assert app.multiselect(key="prof_model").value == ["resnet50"]
    assert len(app.get("plotly_chart")) == 1
    table = app.main.dataframe[0].value
    assert len(table) > 0 and set(table["model"]) == {"resnet50"} and table["source"].str.len().min() > 3


def test_profiles_filters_rerun(app):
    app.multiselect(key="prof_model").set_value(["bert-large", "resnet50"]).run()
    assert not app.exception
    gpus = app.multiselect(key="prof_gpu").options
    app.multiselect(key="prof_gpu").set_value([gpus[0]]).run()
    assert not app.exception
    table = app.main.dataframe[0].value
    assert set(table["sku"]) == {gpus[0]}
    app.multiselect(key="prof_kind").set_value(["published"]).run()
    assert not app.exception and set(app.main.dataframe[0].value["kind"]) == {"published"}


def test_empty_filter_explains(app):
    app.multiselect(key="prof_model").set_value(["lenet"]).run()  # published on A100 only
    app.multiselect(key="prof_gpu").set_value(["T4-16GB"]).run()
    assert not app.exception
    assert any("No latency points match" in w.value for w in app.warning)


def test_profiles_display_toggles(app):
    app.toggle(key="prof_loglat").set_value(True).run()
    app.toggle(key="prof_tails").set_value(False).run()
    assert not app.exception
    fig = app.get("plotly_chart")[0].proto.spec
    assert '"type":"log"' in fig.replace(" ", "")
