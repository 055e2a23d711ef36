"""Saved scenarios in a hosted app have an owner, and the shelf has caps (issue 17); local use is unchanged."""

import uuid

import duckdb
import pytest
from streamlit.testing.v1 import AppTest

from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.store import ScenarioLimitError, ScenarioOwnerError, StoreError
from engine.store import scenarios as shelf_module
from engine.store.scenarios import (AUTHOR_MAX, NOTE_MAX, SAVED_PER_OWNER_MAX, SCENARIO_MAX_BYTES, ScenarioShelf,
                                    owner_id)
from tests.conftest import ROOT

SC = load_scenario(DEFAULT_SCENARIO)
ANA, BOB = "token-of-ana", "token-of-bob"


@pytest.fixture(params=["file", "memory"])
def shelf(request, tmp_path):
    return ScenarioShelf(tmp_path / "user" if request.param == "file" else None)


# --------------------------------------------------------------------------- owners

def test_only_the_owner_may_overwrite_rename_or_delete(shelf):
    shelf.save(SC, name="anas", note="first", owner=ANA)
    assert shelf.get("anas").owned_by(ANA) and not shelf.get("anas").owned_by(BOB)
    assert shelf.names() == ["anas"]  # everyone lists and loads
    for attempt in (lambda: shelf.save(SC, name="anas", note="bob's", overwrite=True, owner=BOB),
                    lambda: shelf.rename("anas", "bob's now", owner=BOB),
                    lambda: shelf.delete("anas", owner=BOB)):
        with pytest.raises(ScenarioOwnerError, match="'anas' was saved by another session; only its owner may"):
            attempt()
    assert shelf.names() == ["anas"] and shelf.get("anas").note == "first"
    assert shelf.save(SC, name="anas", note="second", overwrite=True, owner=ANA).note == "second"
    assert shelf.rename("anas", "ana v2", owner=ANA).owned_by(ANA)
    shelf.delete("ana v2", owner=ANA)
    assert shelf.names() == []


def test_the_token_itself_is_not_stored(tmp_path):
    shelf = ScenarioShelf(tmp_path)
    shelf.save(SC, owner=ANA)
    assert ANA.encode() not in (tmp_path / "saved_scenarios.parquet").read_bytes()
    assert shelf.get(SC.name).owner == owner_id(ANA)


def test_a_locally_saved_scenario_cannot_be_changed_from_the_hosted_app(shelf):
    shelf.save(SC)  # no owner: the CLI or a local app
    with pytest.raises(ScenarioOwnerError, match="saved by someone outside this hosted app"):
        shelf.delete(SC.name, owner=BOB)


def test_local_use_changes_anything_as_before(shelf):
    shelf.save(SC, name="hosted one", owner=ANA)
    shelf.save(SC, name="hosted one", note="local edit", overwrite=True)
    assert shelf.get("hosted one").owned_by(ANA)  # a local overwrite leaves the owner in charge
    shelf.rename("hosted one", "renamed locally")
    shelf.delete("renamed locally")
    assert shelf.names() == []


def test_a_file_from_before_owners_reads_as_locally_saved(tmp_path):
    con = duckdb.connect(":memory:")
    path = str(tmp_path / "saved_scenarios.parquet").replace("'", "''")
    con.execute(f"COPY (SELECT 'old' AS name, 'ana' AS author, '' AS note, '2026-01-01T00:00:00+00:00' AS saved_at, "
                f"'{SC.model_copy(update={'name': 'old'}).to_json()}' AS scenario) TO '{path}' (FORMAT parquet)")
    con.close()
    shelf = ScenarioShelf(tmp_path)
    assert shelf.get("old").owner == "" and shelf.names() == ["old"]
    shelf.save(SC, name="new", owner=ANA)
    assert shelf.names() == ["new", "old"]


# --------------------------------------------------------------------------- caps

def test_long_notes_and_authors_are_refused_naming_the_limit(shelf):
    with pytest.raises(ScenarioLimitError, match=f"note: 20,000,000 characters is more than the {NOTE_MAX:,} allowed"):
        shelf.save(SC, note="x" * 20_000_000)
    with pytest.raises(ScenarioLimitError, match=f"author: .* more than the {AUTHOR_MAX:,} allowed"):
        shelf.save(SC, author="a" * (AUTHOR_MAX + 1))
    assert shelf.names() == []
    assert shelf.save(SC, note="n" * NOTE_MAX, author="a" * AUTHOR_MAX).note == "n" * NOTE_MAX


def test_a_huge_scenario_is_refused_naming_the_limit(shelf):
    timestamps = [i * 0.001234567890123 for i in range(50_000)]  # the most a trace holds, long decimals
    trace = {**DEFAULT_SCENARIO, "workload": {"arrival": {"kind": "trace", "timestamps": timestamps}}}
    big = load_scenario(trace)
    with pytest.raises(ScenarioLimitError, match=f"more than the {SCENARIO_MAX_BYTES // 1024} kB"):
        shelf.save(big)
    assert shelf.names() == []


def test_the_number_saved_is_capped_per_owner_and_in_all(shelf, monkeypatch):
    monkeypatch.setattr(shelf_module, "SAVED_PER_OWNER_MAX", 3)
    monkeypatch.setattr(shelf_module, "SAVED_MAX", 5)
    for i in range(3):
        shelf.save(SC, name=f"ana {i}", owner=ANA)
    with pytest.raises(ScenarioLimitError, match="this session has saved 3 scenarios, the most one session may"):
        shelf.save(SC, name="ana 3", owner=ANA)
    shelf.save(SC, name="ana 0", overwrite=True, owner=ANA)  # replacing one of yours needs no room
    shelf.save(SC, name="bob 0", owner=BOB)
    shelf.save(SC, name="local 0")
    with pytest.raises(ScenarioLimitError, match="already holds 5 saved scenarios, the most it may"):
        shelf.save(SC, name="local 1")
    assert len(shelf.names()) == 5
    assert SAVED_PER_OWNER_MAX >= 10  # the real limit leaves room for a working session


def test_limits_are_store_errors_so_pages_and_the_cli_show_them():
    assert issubclass(ScenarioLimitError, StoreError) and issubclass(ScenarioOwnerError, StoreError)


# --------------------------------------------------------------------------- the Report page, hosted

@pytest.fixture
def hosted_env(monkeypatch):
    monkeypatch.setenv("KNEEPOINT_HOSTED", "1")
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)


def _report_session() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(str(ROOT / "pages" / "report.py")).run()
    assert not at.exception, at.exception
    return at


def _save(at: AppTest, name: str, overwrite: bool = False) -> None:
    at.text_input(key="rep_save_name").set_value(name)
    at.checkbox(key="rep_save_overwrite").set_value(overwrite)
    at.button(key="rep_save").click().run()
    assert not at.exception, at.exception


def test_hosted_sessions_share_the_list_but_not_the_right_to_change(hosted_env):
    name = f"ana {uuid.uuid4().hex[:8]}"
    ana, bob = _report_session(), _report_session()
    _save(ana, name)
    assert any(f"Saved {name!r}" in s.value for s in ana.success)
    bob.run()
    assert name in bob.selectbox(key="rep_saved_pick").options  # listed for everyone
    bob.selectbox(key="rep_saved_pick").set_value(name).run()
    assert bob.button(key="rep_delete").disabled and bob.button(key="rep_rename").disabled
    _save(bob, name, overwrite=True)
    assert any("only its owner may overwrite it" in e.value for e in bob.error)
    bob.button(key="rep_saved_pin").click().run()  # loading is for everyone
    assert not bob.exception and any(f"Pinned {name!r}" in s.value for s in bob.success)
    ana.run()
    ana.selectbox(key="rep_saved_pick").set_value(name).run()
    assert not ana.button(key="rep_delete").disabled
    ana.button(key="rep_delete").click().run()
    assert not ana.exception and any(f"Deleted {name!r}" in s.value for s in ana.success)
