"""Names, notes and echoed values are text: a crafted link whose design name is Markdown or HTML must not put
an image (fetched from anywhere) or raw HTML on any visitor's page (issue 17)."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.io.urlstate import _pack, encode, encode_many
from tests.conftest import ROOT
from tests.pagetest import APP
from ui.text import md

IMAGE = "![x](http://example.invalid/a.png)"
HTML = "<img src=x>"
NAME = f"{IMAGE} {HTML}"
# An image, a link target or an HTML tag in Markdown source, not preceded by the escaping backslash.
RAW = re.compile(r"(?<!\\)!\[|(?<!\\)\]\(|(?<!\\)<[a-zA-Z]")


def _scenario(name: str = NAME):
    return load_scenario({**DEFAULT_SCENARIO, "name": name})


def _token(data) -> str:
    return _pack(data)  # the link's token format, for data that need not be a valid scenario


def markdown_sources(at: AppTest) -> list[str]:
    """The Markdown source of every element that renders Markdown."""
    kinds = ("markdown", "caption", "error", "warning", "info", "success", "toast", "title", "header", "subheader")
    return [str(e.value) for kind in kinds for e in getattr(at, kind)]


def assert_no_raw_markup(at: AppTest) -> None:
    for source in markdown_sources(at):
        assert not RAW.search(source), source


def test_md_escapes_markdown_html_and_streamlit_directives():
    assert RAW.search(IMAGE) and RAW.search(HTML) and not RAW.search(md(NAME))
    assert md(IMAGE) == r"!\[x\](http://example.invalid/a.png)"
    assert md(HTML) == r"\<img src=x\>"
    assert md(":red[a] $x$ **b** _it_") == r":red\[a\] \$x\$ \*\*b\*\* \_it\_"
    assert md("# title") == r"\# title" and md("1. first") == r"1\. first"
    assert md("line one\nline two") == "line one line two"  # no new block
    # ordinary prose keeps its source: field paths, numbers, dashes
    assert md("workload.query_size.table: 3,000 req/s on A100-SXM4-80GB") == \
        "workload.query_size.table: 3,000 req/s on A100-SXM4-80GB"


# (page, query parameter, text near the name that shows the name reached the page)
LINKED = [("search.py", "s", "Around"), ("preprocessing.py", "s", "Starting from"), ("rpc.py", "s", "Starting from"),
          ("cost.py", "s", "Starting from"), ("compare.py", "c", "Percentages are changes")]


@pytest.mark.parametrize("page,param,near", LINKED, ids=[p[0] for p in LINKED])
def test_a_crafted_name_is_shown_escaped(page, param, near):
    scenario = _scenario()
    token = encode_many([scenario, _scenario("second")]) if param == "c" else encode(scenario)
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params[param] = token
    at.switch_page(str(ROOT / "pages" / page)).run()
    assert not at.exception, at.exception
    assert_no_raw_markup(at)
    shown = [s for s in markdown_sources(at) if near in s]
    assert shown and md(NAME) in shown[0]  # the name is on the page, as text


def test_design_pin_toast_shows_the_name_as_text():
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["s"] = encode(_scenario())
    at.run()
    at.button(key="d_pin").click().run()
    assert not at.exception, at.exception
    assert_no_raw_markup(at)
    assert any(md(NAME) in t.value for t in at.toast)


def test_an_error_echoing_a_crafted_value_is_escaped():
    data = json.loads(_scenario().to_json())
    data["model"] = IMAGE  # not a model: the error names the field and echoes the value
    at = AppTest.from_file(APP, default_timeout=300)
    at.query_params["s"] = _token(data)
    at.run()
    assert not at.exception, at.exception
    assert_no_raw_markup(at)
    assert any("model" in e.value and "example" in e.value for e in at.error)
