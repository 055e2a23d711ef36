"""The Design page keeps the scenario's arrival process (it used to write every design back as Poisson) and takes
a trace as an upload, parsed by the engine into inline timestamps; a bad upload is named by line, never echoed."""

import pytest
from streamlit.testing.v1 import AppTest

from engine.hosting import UploadLimits
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.io.traces import TraceError, parse_trace_upload
from engine.io.urlstate import decode, encode
from tests.conftest import ROOT
from ui.design_form import ARRIVAL_EXTRA, from_widgets, to_widgets

APP = str(ROOT / "app.py")
DIURNAL = {"kind": "diurnal", "rate_rps": 800.0, "period_s": 30.0, "amplitude": 0.7}


def shown_scenario(at) -> dict:
    token = at.query_params["s"]
    return decode(token[0] if isinstance(token, list) else token)


def test_the_form_round_trips_every_arrival_field(catalog):
    scenario = load_scenario({**DEFAULT_SCENARIO, "workload": {"arrival": DIURNAL}})
    widgets = to_widgets(scenario, catalog.gpu(scenario.gpu.sku))
    again = load_scenario(from_widgets(widgets))
    assert again.workload.arrival == scenario.workload.arrival
    trace = load_scenario({**DEFAULT_SCENARIO, "workload": {"arrival": {"kind": "trace", "timestamps": [0, 1, 3],
                                                                         "trace_unit": "ms"}}})
    widgets = to_widgets(trace, catalog.gpu(trace.gpu.sku))
    assert widgets[ARRIVAL_EXTRA]["timestamps"] == [0, 1, 3]
    assert load_scenario(from_widgets(widgets)).workload.arrival == trace.workload.arrival


def test_the_upload_parser_applies_the_hosting_limits():
    limits = UploadLimits(max_mb=1, max_rows=10)
    assert parse_trace_upload(b"t\n" + b"".join(b"%d\n" % i for i in range(10)), "ok.csv", limits) == \
        [float(i) for i in range(10)]
    with pytest.raises(TraceError, match="ok.csv: 11 timestamps is over the upload limit of 10 rows"):
        parse_trace_upload(b"".join(b"%d\n" % i for i in range(11)), "/some/dir/ok.csv", limits)
    with pytest.raises(TraceError, match="over the upload limit of 1 MB"):
        parse_trace_upload(b"1\n" * 600_000, "big.csv", limits)


def test_a_linked_diurnal_design_stays_diurnal():
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["s"] = encode(load_scenario({**DEFAULT_SCENARIO, "workload": {"arrival": DIURNAL}}))
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="d_arrival").value == "diurnal"
    arrival = shown_scenario(at)["workload"]["arrival"]
    assert arrival["kind"] == "diurnal" and arrival["amplitude"] == 0.7 and arrival["period_s"] == 30.0


def test_a_trace_is_uploaded_into_the_scenario_and_a_bad_one_is_named():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    at.selectbox(key="d_arrival").set_value("trace").run()
    assert not at.exception, at.exception
    assert any("needs at least two distinct arrival timestamps" in e.value for e in at.error)
    bad = b"timestamp\n0.0\nAWS_SECRET=abc123\n"
    at.file_uploader(key="d_trace_file").set_value(("bad.csv", bad, "text/csv")).run()
    assert not at.exception, at.exception
    errors = " ".join(e.value for e in at.error)
    assert "bad.csv: line 3: column 1 is not a number" in errors and "AWS_SECRET" not in errors
    good = b"timestamp\n" + b"".join(b"%.4f\n" % (i / 400) for i in range(801))  # 400 requests/s for 2 s
    at.file_uploader(key="d_trace_file").set_value(("good.csv", good, "text/csv")).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    arrival = shown_scenario(at)["workload"]["arrival"]
    assert arrival["kind"] == "trace" and len(arrival["timestamps"]) == 801
    assert at.number_input(key="d_rate").value == pytest.approx(400.0)  # the trace's own mean rate
    assert any("801 arrivals" in c.value for c in at.caption)
