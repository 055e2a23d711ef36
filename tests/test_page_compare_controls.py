"""Compare after designs were pinned on Design and a preset was then loaded (the README's order): every control
keeps working. A browser sends the selectbox's label; after the pins change it may send a label from the old
list, which Streamlit hands to the page as a plain string (issue 17: TypeError at the baseline check)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT
from tests.pagetest import APP

PAGE = str(ROOT / "pages" / "compare.py")


@pytest.fixture
def pinned_then_preset() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=300)
    at.run()
    at.text_input(key="d_name").set_value("my own design").run()
    at.button(key="d_pin").click().run()
    at.switch_page(PAGE).run()
    at.button(key="cmp_load").click().run()
    assert not at.exception, at.exception
    return at


def _columns(at: AppTest) -> list[str]:
    return list(at.table[1].value.columns)


@pytest.mark.parametrize("key", ["cmp_baseline", "cmp_drop"])
def test_a_stale_label_from_the_old_pins_is_replaced(pinned_then_preset, key):
    at = pinned_then_preset
    box = at.selectbox(key=key)
    box.options.append("my own design")  # the browser still lists the old pins' label and sends it
    box.set_value("my own design").run()
    assert not at.exception, at.exception
    assert len(_columns(at)) == 3 and "(baseline)" in at.table[1].value.iloc[0, 0]


def test_every_control_after_pin_then_preset(pinned_then_preset):
    at = pinned_then_preset
    names = _columns(at)
    at.selectbox(key="cmp_baseline").set_value(names[2]).run()
    assert not at.exception and "(baseline)" in at.table[1].value[names[2]].iloc[0]
    at.selectbox(key="cmp_drop").set_value(names[2]).run()  # remove the baseline: the first design takes over
    assert not at.exception, at.exception
    assert _columns(at) == names[:2] and "(baseline)" in at.table[1].value[names[0]].iloc[0]
    at.button(key="cmp_pin").click().run()
    assert not at.exception and len(_columns(at)) == 3 and "my own design" in _columns(at)
    at.number_input(key="cmp_sim_n").set_value(2000).run()
    at.button(key="cmp_sim").click().run()
    assert not at.exception, at.exception
    assert "SLA-bounded throughput, simulated (req/s)" in at.table[1].value.index
    at.button(key="cmp_load").click().run()
    assert not at.exception and len(_columns(at)) == 3 and "my own design" not in _columns(at)
    at.button(key="cmp_clear").click().run()
    assert not at.exception and any("No designs pinned yet" in i.value for i in at.info)
