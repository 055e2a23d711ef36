"""Issue 18, 'Answers that mislead', under AppTest: the Design headline says whether an SLA miss is a latency floor
or saturation, and the design's name follows the design until the user types one."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.pagetest import APP, metrics


@pytest.fixture
def design():
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_default_headline_names_a_latency_floor_not_the_cpu_saturating(design):
    assert metrics(design)["SLA-bounded throughput"] == "0 req/s" and not design.success
    (headline,) = [w.value for w in design.warning]
    assert headline.startswith("Misses the p99 15 ms SLA at 3,000 req/s")
    assert "A latency floor, not saturation" in headline and "host_cpu, is 61% busy" in headline


def test_with_a_dpu_the_headline_names_the_saturating_stage(design):
    design.selectbox(key="d_pre").set_value("dpu").run()
    (headline,) = [s.value for s in design.success]
    assert headline.startswith("Meets the p99 15 ms SLA at 3,000 req/s")
    assert "Saturation" in headline and "queueing at preprocess:dpu" in headline
