"""The render floor of benchmarks/page_first_render.py runs with the app's Streamlit settings: a setting that changes
how a page is served or run (postScriptGC, upload size) must be the same in both, or the floor stops being the
floor of this app."""

import tomllib

from tests.conftest import ROOT


def test_floor_config_is_the_apps():
    app = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    floor = tomllib.loads((ROOT / "benchmarks" / "render_floor" / ".streamlit" / "config.toml").read_text())
    assert floor == app


def test_floor_pages_exist():
    floor = ROOT / "benchmarks" / "render_floor"
    app = (floor / "app.py").read_text()
    for page in ("metric.py", "chart.py"):
        assert f'st.Page("{page}"' in app and (floor / page).is_file()
