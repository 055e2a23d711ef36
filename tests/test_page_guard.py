"""Every page enforces the password gate itself (ui.gate.guard_page): Streamlit can run a page file without app.py
(its legacy pages/ router takes a server's first script run, so a first link to /report ran the Report page past
the gate; tests/test_browser_deeplink.py shows it in a browser)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "pages").glob("*.py"))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_page_calls_the_guard_before_doing_anything(page):
    body = ast.parse(page.read_text()).body
    first = next(node for node in body if not isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr))
                 or (isinstance(node, ast.Expr) and not isinstance(node.value, ast.Constant)))
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call) \
        and getattr(first.value.func, "id", None) == "guard_page", f"{page.name} does something before guard_page()"


@pytest.mark.parametrize("name", ["report.py", "profiles.py"])
def test_a_page_run_without_app_py_asks_for_the_password(monkeypatch, name):
    monkeypatch.setenv("KNEEPOINT_PASSWORD", "correct horse")
    at = AppTest.from_file(str(ROOT / "pages" / name), default_timeout=120).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Kneepoint"]  # the gate's title, not the page's
    assert len(at.text_input) == 1 and at.text_input[0].key == "gate_password"
    assert not at.dataframe and not at.metric  # nothing of the page itself


def test_a_page_run_without_app_py_opens_once_the_password_is_given(monkeypatch):
    monkeypatch.setenv("KNEEPOINT_PASSWORD", "correct horse")
    at = AppTest.from_file(str(ROOT / "pages" / "cost.py"), default_timeout=120).run()
    at.text_input(key="gate_password").input("correct horse")
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["Cost"]
