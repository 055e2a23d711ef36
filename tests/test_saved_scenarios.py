"""Saved scenarios: save, list, load, rename, delete; names validated; atomic; two processes lose nothing; CLI."""

import json
import subprocess
import sys
import time
from datetime import datetime, timezone

import pytest

from engine.cli.main import main
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.store import ScenarioNameError, Store, StoreError
from engine.store.scenarios import ScenarioShelf
from tests.conftest import ROOT

SC = load_scenario(DEFAULT_SCENARIO)


@pytest.fixture(params=["file", "memory"])
def shelf(request, tmp_path):
    return ScenarioShelf(tmp_path / "user" if request.param == "file" else None)


def test_save_list_get_rename_delete(shelf):
    when = datetime(2026, 3, 4, 5, 6, 7, tzinfo=timezone.utc)
    row = shelf.save(SC, author="ana", note="PREBA default", now=when)
    assert (row.name, row.author, row.note, row.saved_at) == (SC.name, "ana", "PREBA default", when)
    shelf.save(SC, name="b-side")
    assert shelf.names() == ["b-side", SC.name]
    got = shelf.get("b-side")
    assert load_scenario(got.scenario).name == "b-side"  # the stored scenario carries the saved name
    assert load_scenario(got.scenario).model_copy(update={"name": SC.name}) == SC
    shelf.rename("b-side", "c side")
    assert shelf.names() == ["c side", SC.name] and load_scenario(shelf.get("c side").scenario).name == "c side"
    shelf.delete(SC.name)
    assert shelf.names() == ["c side"]


@pytest.mark.parametrize("name", ["", " lead", "trail ", "a/b", "../x", "x" * 81, "tab\there", "-dash first", "new\nline"])
def test_bad_names_are_rejected_with_a_message(shelf, name):
    with pytest.raises(ScenarioNameError) as e:
        shelf.save(SC, name=name)
    assert f"name: {name!r} is not a valid scenario name" in str(e.value) and "letters, digits" in str(e.value)
    assert shelf.names() == []


def test_taken_and_unknown_names_are_refused(shelf):
    shelf.save(SC, note="first")
    with pytest.raises(ScenarioNameError, match="already saved; choose another name or overwrite"):
        shelf.save(SC, note="second")
    assert shelf.get(SC.name).note == "first"
    assert shelf.save(SC, note="second", overwrite=True).note == "second"
    shelf.save(SC, name="other")
    with pytest.raises(ScenarioNameError, match="new name: a scenario named 'other' is already saved"):
        shelf.rename(SC.name, "other")
    with pytest.raises(ScenarioNameError, match=r"no saved scenario is named 'nope'; saved: other, resnet50, A100"):
        shelf.get("nope")
    with pytest.raises(ScenarioNameError, match="no saved scenario is named 'nope'"):
        shelf.delete("nope")
    with pytest.raises(ScenarioNameError, match="new name: 'a/b' is not a valid"):
        shelf.rename("other", "a/b")


def test_a_failed_write_changes_nothing(tmp_path, monkeypatch):
    shelf = ScenarioShelf(tmp_path)
    shelf.save(SC)
    before = (tmp_path / "saved_scenarios.parquet").read_bytes()

    def refuse(*_a):
        raise OSError("disk full")

    monkeypatch.setattr("engine.store.scenarios.os.replace", refuse)
    with pytest.raises(StoreError, match="could not be written .*disk full.*nothing changed"):
        shelf.save(SC, name="another")
    monkeypatch.undo()
    assert (tmp_path / "saved_scenarios.parquet").read_bytes() == before and shelf.names() == [SC.name]
    assert not list(tmp_path.glob(".*.tmp"))


def test_a_corrupt_file_is_reported_not_raised_as_a_trace(tmp_path):
    (tmp_path / "saved_scenarios.parquet").write_bytes(b"not parquet")
    with pytest.raises(StoreError, match="cannot be read .*move the file away"):
        ScenarioShelf(tmp_path).list()


_WORKER = """
import sys, time
from pathlib import Path
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.store.scenarios import ScenarioShelf
directory, tag, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
shelf, sc = ScenarioShelf(directory), load_scenario(DEFAULT_SCENARIO)
(directory / f"ready-{tag}").touch()
while not (directory / "go").exists():  # start together, so the saves interleave
    time.sleep(0.005)
if tag == "reader":  # lists while the others write: never a half-replaced file
    while not (directory / "stop").exists():
        shelf.list()
else:
    for i in range(n):
        shelf.save(sc, name=f"{tag} {i}", author=tag)
"""


def test_two_processes_saving_at_once_lose_nothing(tmp_path):
    n = 25
    tags = ("alpha", "beta", "reader")
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path), tag, str(n)], cwd=ROOT,
                              stderr=subprocess.PIPE, text=True) for tag in tags]
    deadline = time.monotonic() + 120
    while not all((tmp_path / f"ready-{t}").exists() for t in tags):
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), [p.stderr.read() for p in procs]
        time.sleep(0.01)
    (tmp_path / "go").touch()
    try:
        for p in procs[:2]:
            assert p.wait(timeout=120) == 0, p.stderr.read()
    finally:
        (tmp_path / "stop").touch()
    assert procs[2].wait(timeout=60) == 0, procs[2].stderr.read()
    names = ScenarioShelf(tmp_path).names()
    assert len(names) == 2 * n
    assert set(names) == {f"{t} {i}" for t in ("alpha", "beta") for i in range(n)}


def test_store_keeps_saved_scenarios_beside_user_rows(tmp_path):
    path = tmp_path / "k.duckdb"
    a = Store(path)
    a.saved_scenarios.save(SC, author="ana")
    assert (tmp_path / "k-user" / "saved_scenarios.parquet").exists()
    b = Store(path)  # another handle (process) sees it
    assert b.saved_scenarios.get(SC.name).author == "ana"
    assert Store(path, user_dir=None).saved_scenarios.names() == []  # no directory: in memory only


def test_cli_scenarios_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("KNEEPOINT_DB", str(tmp_path / "k.duckdb"))
    f = tmp_path / "s.json"
    f.write_text(json.dumps(DEFAULT_SCENARIO))
    assert main(["scenarios", "list"]) == 0 and "no saved scenarios" in capsys.readouterr().out
    assert main(["scenarios", "save", str(f), "--name", "rn50 1g", "--author", "ana", "--note", "baseline"]) == 0
    assert main(["scenarios", "save", str(f), "--name", "rn50 1g"]) == 2
    assert "already saved" in capsys.readouterr().err
    assert main(["scenarios", "save", str(f), "--name", "bad/name"]) == 2
    assert "error: name: 'bad/name' is not a valid scenario name" in capsys.readouterr().err
    assert main(["scenarios", "rename", "rn50 1g", "rn50 seven slices"]) == 0
    capsys.readouterr()
    assert main(["scenarios", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(s["name"], s["author"], s["note"]) for s in listed] == [("rn50 seven slices", "ana", "baseline")]
    out = tmp_path / "back.json"
    assert main(["scenarios", "load", "rn50 seven slices", "-o", str(out)]) == 0
    assert load_scenario(out.read_text()).model_copy(update={"name": SC.name}) == SC
    assert main(["scenarios", "delete", "rn50 seven slices"]) == 0
    assert main(["scenarios", "delete", "rn50 seven slices"]) == 2
    assert "no saved scenario is named" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**DEFAULT_SCENARIO, "model": "no-such-model"}))
    assert main(["scenarios", "save", str(bad)]) == 2
    assert "model: 'no-such-model' has no latency profile" in capsys.readouterr().err
