"""Every Simulate / Search / Run button pressed twice in one session, then once in a second session with the same
inputs: the second answer comes from the process-wide result cache and must neither raise nor lose the result.

Before ui/compute.py, the st.cache_data replay of a progress bar written from inside the cached function raised
CacheReplayClosureError on every second request with the same inputs (issue 17)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.pagetest import APP, metrics


def _design(at: AppTest) -> None:
    at.number_input(key="d_sim_n").set_value(2000).run()


def _compare(at: AppTest) -> None:
    at.button(key="cmp_load").click().run()  # PREBA's three designs
    at.number_input(key="cmp_sim_n").set_value(2000).run()


def _partitioning(at: AppTest) -> None:
    at.number_input(key="par_count").set_value(1).run()
    at.number_input(key="par_n").set_value(2000).run()


def _search(at: AppTest) -> None:
    at.multiselect(key="srch_pre").set_value(["cpu", "dpu"]).run()
    at.number_input(key="srch_confirm").set_value(1).run()


def _design_shows(at: AppTest) -> bool:
    return any("Diamonds: simulated" in c.value for c in at.caption)


def _compare_shows(at: AppTest) -> bool:
    return "SLA-bounded throughput, simulated (req/s)" in at.table[1].value.index


def _partitioning_shows(at: AppTest) -> bool:
    return "ELSA simulated (req/s)" in at.dataframe[0].value.columns


def _search_shows(at: AppTest) -> bool:
    return metrics(at).get("Designs evaluated") == "2" and len(at.get("plotly_chart")) == 2


# (page file, set the inputs small, the button, the result is on the page, ui.compute's kind of call)
BUTTONS = [("design.py", _design, "d_sim", _design_shows, "design-sim"),
           ("compare.py", _compare, "cmp_sim", _compare_shows, "compare-sim"),
           ("partitioning.py", _partitioning, "par_sim", _partitioning_shows, "partition-sim"),
           ("search.py", _search, "srch_run", _search_shows, "search")]


def _open(page: str, setup) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.switch_page(str(ROOT / "pages" / page)).run()
    setup(at)
    assert not at.exception, at.exception
    return at


@pytest.mark.parametrize("page,setup,button,shows,kind", BUTTONS, ids=[b[0] for b in BUTTONS])
def test_button_twice_then_in_a_second_session(page, setup, button, shows, kind):
    from ui.compute import result_cache

    first = _open(page, setup)
    for _ in range(2):
        first.button(key=button).click().run()
        assert not first.exception, first.exception
        assert shows(first), f"{page}: no result after pressing {button}"
    kept = len(result_cache(kind))
    second = _open(page, setup)  # another visitor, same question: answered from the shared cache
    second.button(key=button).click().run()
    assert not second.exception, second.exception
    assert shows(second), f"{page}: no result in a second session"
    assert kept >= 1 and len(result_cache(kind)) == kept  # nothing was computed again


def test_result_cache_is_bounded_and_hands_out_copies():
    from ui.compute import ResultCache, _MISSING

    cache = ResultCache(max_entries=2)
    cache.put("a", {"points": [1]})
    cache.get("a")["points"].append(2)  # a session that changes its copy changes nobody else's
    assert cache.get("a") == {"points": [1]}
    cache.put("b", 2)
    cache.get("a")  # "a" is now the most recently used, so "b" goes first
    cache.put("c", 3)
    assert len(cache) == 2 and cache.get("b") is _MISSING and cache.get("a") == {"points": [1]}
