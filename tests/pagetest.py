"""Helpers shared by the AppTest page tests: open a page (optionally from a link), read metrics and links."""

from __future__ import annotations

from typing import Optional

from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

APP = str(ROOT / "app.py")


def open_page(page: str, params: Optional[dict] = None, timeout: int = 120) -> AppTest:
    """Run app.py on `page` (a file under pages/) with query parameters `params`; fails on an exception."""
    at = AppTest.from_file(APP, default_timeout=timeout)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    at.switch_page(str(ROOT / "pages" / page)).run()
    assert not at.exception, at.exception
    return at


def metrics(at) -> dict:
    return {m.label: m.value for m in at.metric}


def query_token(at, key: str = "s") -> str:
    value = at.query_params[key]
    return value[0] if isinstance(value, list) else value


def open_profiles_tab(at: AppTest, label: str) -> AppTest:
    """Open one tab of the Profiles page and rerun (only the open tab runs, pages/profiles.py)."""
    at.session_state["prof_view"] = label
    at.run()
    assert not at.exception, at.exception
    return at


def sidebar_row_counts(at: AppTest) -> dict[str, int]:
    """{table: rows} from the sidebar's store details (a Markdown table: ui.session.sidebar_store_info); empty when
    the sidebar shows none."""
    table = next((m.value for m in at.sidebar.markdown if m.value.startswith("| Table | Rows |")), None)
    if table is None:
        return {}
    rows = [line.strip("|").split("|") for line in table.splitlines()[2:]]
    return {name.strip().replace("\\", ""): int(n.strip().replace(",", "")) for name, n in rows}
