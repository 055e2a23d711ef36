"""Crafted links on every page: a garbage token, a well-formed token whose scenario has a bad value, and values of
the wrong JSON type get a one-line message naming the problem, never an exception or a traceback (issue 17).
Hosted deployments also hide the details of any exception that does escape."""

from __future__ import annotations

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from engine.presets import DEFAULT_SCENARIO
from engine.io.urlstate import _pack
from tests.conftest import ROOT
from tests.pagetest import APP

GARBAGE = "not-a-token!!"
BAD_VALUE = {**DEFAULT_SCENARIO, "model": "no-such-model"}  # well formed, but the value is wrong
WRONG_TYPES = {**DEFAULT_SCENARIO, "gpu": "A100", "workload": [1, 2]}
PARTITION_VIEW_BAD = {"par_model": "no-such-model", "par_count": 999, "par_mu": "high", "par_dist": 3}
TENANCY_VIEW_BAD = {"ten_model": ["x"], "ten_batch": -5, "ten_rate": "fast", "ten_weights": "yes", "ten_mig_gpu": 7}

# (page, query parameter, token, words the message must contain)
SCENARIO_PAGES = ["design.py", "search.py", "preprocessing.py", "rpc.py", "cost.py"]
CASES = [(page, "s", GARBAGE, "damaged") for page in SCENARIO_PAGES] \
    + [(page, "s", _pack(BAD_VALUE), "no-such-model") for page in SCENARIO_PAGES] \
    + [(page, "s", _pack(WRONG_TYPES), "gpu") for page in SCENARIO_PAGES] \
    + [("compare.py", "c", GARBAGE, "damaged"), ("compare.py", "c", _pack([BAD_VALUE]), "no-such-model"),
       ("compare.py", "c", _pack({"not": "a list"}), "not a list"), ("compare.py", "c", _pack([WRONG_TYPES]), "gpu"),
       ("partitioning.py", "p", GARBAGE, "damaged"), ("partitioning.py", "p", _pack(PARTITION_VIEW_BAD), "par_"),
       ("partitioning.py", "p", _pack([1, 2]), "not an object"),
       ("tenancy.py", "t", GARBAGE, "damaged"), ("tenancy.py", "t", _pack(TENANCY_VIEW_BAD), "ten_"),
       ("tenancy.py", "t", _pack("text"), "not an object")]


@pytest.mark.parametrize("page,param,token,words", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_crafted_link_gets_a_message_not_a_trace(page, param, token, words):
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params[param] = token
    at.switch_page(str(ROOT / "pages" / page)).run()
    assert not at.exception, at.exception
    messages = [e.value for e in at.error]
    assert any(words in m for m in messages), messages
    assert all("\n" not in m and "Traceback" not in m for m in messages)


@pytest.fixture
def error_details():
    """Restore Streamlit's process-wide option after a test that may change it."""
    before = st.get_option("client.showErrorDetails")
    yield
    st.set_option("client.showErrorDetails", before)


def test_hosted_mode_hides_tracebacks(monkeypatch, error_details):
    monkeypatch.setenv("KNEEPOINT_HOSTED", "1")
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)
    AppTest.from_file(APP, default_timeout=300).run()
    assert st.get_option("client.showErrorDetails") == "none"


def test_local_mode_keeps_error_details(monkeypatch, error_details):
    monkeypatch.delenv("KNEEPOINT_HOSTED", raising=False)
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)
    st.set_option("client.showErrorDetails", "full")
    AppTest.from_file(APP, default_timeout=300).run()
    assert st.get_option("client.showErrorDetails") == "full"


def test_the_image_hides_tracebacks_too():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none" in dockerfile
