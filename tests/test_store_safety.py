"""The store never destroys a file that is not its own (issue 17): what KNEEPOINT_DB points at, the lock file,
and the fallback directory in the shared temporary directory."""

import errno
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from engine.errors import KneepointError
from engine.seed.records import LatencyPointRow
from engine.store import ENV_DB, Store, StoreError, resolve_db_path
from engine.store.build import PRIVATE_DIR_MODE, private_temp_dir
from engine.store.locking import LOCK_MODE
from engine.store.scenarios import ScenarioShelf
from engine.scenario import load_scenario
from tests.conftest import ROOT

ROOT_USER = os.geteuid() == 0
#: a directory nobody can create files in, root included (root ignores mode bits)
UNWRITABLE = Path("/proc")


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and "Traceback" not in text, text
    return text


def _row(batch: int = 3) -> LatencyPointRow:
    return LatencyPointRow(model="resnet50", sku="T4-16GB", partition="full", precision="fp16", framework="safety-test",
                           batch=batch, mean_ms=5.0, p99_ms=6.0, throughput=600.0, kind="measured",
                           source="safety test")


# --------------------------------------------------------------------------- what KNEEPOINT_DB points at

def test_a_text_file_at_the_path_is_refused_not_deleted(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("my notes, not a database\n" * 50)
    with pytest.raises(StoreError) as e:
        Store(path)
    assert ENV_DB in _one_line(e.value) and "not a DuckDB database" in str(e.value)
    assert "my notes" not in str(e.value)  # the file's content is not echoed
    assert path.read_text() == "my notes, not a database\n" * 50


def test_another_programs_duckdb_database_is_refused_not_replaced(tmp_path):
    path = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE orders AS SELECT range AS id FROM range(100)")
    con.close()
    before = path.read_bytes()
    with pytest.raises(StoreError) as e:
        Store(path)
    assert ENV_DB in _one_line(e.value) and "Kneepoint's metadata" in str(e.value)
    assert path.read_bytes() == before
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("SELECT count(*) FROM orders").fetchone()[0] == 100
    con.close()


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "empty.duckdb"
    path.touch()
    with pytest.raises(StoreError):
        Store(path)
    assert path.exists() and path.stat().st_size == 0


def test_a_directory_as_the_path_is_one_line_naming_the_setting(tmp_path):
    (tmp_path / "keep.txt").write_text("x")
    with pytest.raises(StoreError) as e:
        Store(tmp_path)
    assert ENV_DB in _one_line(e.value) and "is a directory" in str(e.value)
    assert (tmp_path / "keep.txt").read_text() == "x"


def test_a_database_path_in_an_unwritable_directory_is_one_line(tmp_path):
    with pytest.raises(StoreError) as e:
        Store(UNWRITABLE / "kneepoint-test" / "k.duckdb")
    assert ENV_DB in _one_line(e.value) and "writable" in str(e.value)
    assert isinstance(e.value, KneepointError)


def test_user_rows_in_an_unwritable_directory_are_one_line(tmp_path):
    s = Store(tmp_path / "k.duckdb", user_dir=UNWRITABLE / "kneepoint-test-user")
    with pytest.raises(StoreError) as e:
        s.add_rows("latency_points", [_row()])
    assert ENV_DB in _one_line(e.value)
    assert s.user_counts()["latency_points"] == 0
    s.close()


# --------------------------------------------------------------------------- the lock file

def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    user_dir = tmp_path / "k-user"
    user_dir.mkdir()
    (user_dir / ".lock").symlink_to(victim)
    s = Store(tmp_path / "k.duckdb", user_dir=user_dir)
    with pytest.raises(StoreError) as e:
        s.add_rows("latency_points", [_row()])
    assert "symbolic link" in _one_line(e.value)
    shelf = ScenarioShelf(user_dir)
    scenario = load_scenario({"model": "resnet50", "gpu": {"sku": "T4-16GB"}, "name": "x"})
    with pytest.raises(StoreError):
        shelf.save(scenario)
    assert victim.read_text() == "precious"
    s.close()


def test_the_lock_file_is_not_truncated_and_private(tmp_path):
    user_dir = tmp_path / "k-user"
    s = Store(tmp_path / "k.duckdb", user_dir=user_dir)
    s.add_rows("latency_points", [_row(3)])
    lock = user_dir / ".lock"
    assert stat.S_IMODE(lock.stat().st_mode) == LOCK_MODE
    lock.write_text("left by someone")
    s.add_rows("latency_points", [_row(5)])
    assert lock.read_text() == "left by someone"
    s.close()


# --------------------------------------------------------------------------- the read-only fallback

def test_the_fallback_directory_is_created_private(tmp_path):
    path = private_temp_dir(tmp_path)
    assert path.name == f"kneepoint-{os.getuid()}" and path.is_dir()
    assert stat.S_IMODE(path.stat().st_mode) == PRIVATE_DIR_MODE
    assert private_temp_dir(tmp_path) == path  # and reused


def test_a_fallback_directory_that_is_a_symlink_is_refused(tmp_path):
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / f"kneepoint-{os.getuid()}").symlink_to(elsewhere)
    with pytest.raises(StoreError) as e:
        private_temp_dir(tmp_path)
    assert "symbolic link" in _one_line(e.value) and ENV_DB in str(e.value)


def test_a_fallback_directory_others_can_write_is_refused(tmp_path):
    shared = tmp_path / f"kneepoint-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(StoreError) as e:
        private_temp_dir(tmp_path)
    assert "other users" in _one_line(e.value)


@pytest.mark.skipif(not ROOT_USER, reason="only root can give a directory to another user")
def test_a_fallback_directory_of_another_user_is_refused(tmp_path):
    theirs = tmp_path / f"kneepoint-{os.getuid()}"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 54321, -1)
    with pytest.raises(StoreError) as e:
        private_temp_dir(tmp_path)
    assert "another user" in _one_line(e.value)


def test_a_read_only_data_dir_falls_back_to_the_private_directory(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = resolve_db_path(UNWRITABLE, env={})
    assert path == tmp_path / f"kneepoint-{os.getuid()}" / "kneepoint.duckdb"
    assert stat.S_IMODE(path.parent.stat().st_mode) == PRIVATE_DIR_MODE


def test_saved_scenarios_in_a_read_only_directory_are_listed_but_not_changed(tmp_path, monkeypatch):
    shelf = ScenarioShelf(tmp_path)
    scenario = load_scenario({"model": "resnet50", "gpu": {"sku": "T4-16GB"}, "name": "kept"})
    shelf.save(scenario)
    (tmp_path / ".lock").unlink()  # as shipped in a read-only image: the file, no lock beside it
    real_open = os.open

    def read_only(path, flags, *args):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)
    assert shelf.names() == ["kept"]  # nobody can write there, so reading needs no lock
    with pytest.raises(StoreError) as e:
        shelf.delete("kept")
    assert "Read-only file system" in _one_line(e.value) and ENV_DB in str(e.value)


@pytest.mark.parametrize("make", ["directory", "text file"])
def test_the_cli_says_one_line_for_a_bad_kneepoint_db(tmp_path, make):
    target = tmp_path / "db"
    if make == "directory":
        target.mkdir()
    else:
        target.write_text("not a database")
    env = dict(os.environ, KNEEPOINT_DB=str(target))
    proc = subprocess.run([sys.executable, "-m", "engine", "profiles", "list", "--model", "resnet50"], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    err = "\n".join(line for line in proc.stderr.splitlines() if "nanobind" not in line and "leaked" not in line)
    assert proc.returncode == 2 and err.startswith(f"error: {ENV_DB}: {target}") and "Traceback" not in err, err
    assert err.count("\n") == 0
    assert target.is_dir() if make == "directory" else target.read_text() == "not a database"

