"""Hosted mode: settings, per-session overlays over a shared read-only store, upload limits, the password gate,
and the app in a read-only application directory."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from engine.hosting import MAX_UPLOAD_MB, MAX_UPLOAD_ROWS, SettingsError, UploadLimits, hosting_settings
from engine.io.importers import ImportFailed, import_file, import_upload
from engine.presets import DEFAULT_SCENARIO
from engine.scenario import load_scenario
from engine.store import Store, StoreError
from tests.conftest import ROOT, SEED
from tests.pagetest import open_profiles_tab, sidebar_row_counts

APP = str(ROOT / "app.py")
PROFILES = str(ROOT / "pages" / "profiles.py")
HEADER = (SEED / "latency_points.csv").read_text().splitlines()[0]


def _csv(model: str, rows: int = 1) -> bytes:
    """A Kneepoint latency_points CSV of `rows` measured points of `model` on an A100 1g.10gb slice."""
    lines = [HEADER] + [f"hosting test,{model},A100-SXM4-80GB,1g.10gb,fp16,triton,{b},,{1 + b / 10},,,,,"
                        f"{b / (1 + b / 10) * 1000:.1f},measured,2026-11-22," for b in range(1, rows + 1)]
    return ("\n".join(lines) + "\n").encode()


def _file_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --------------------------------------------------------------------------- settings

def test_settings_default_to_a_local_app_without_gate():
    s = hosting_settings(env={})
    assert (s.hosted, s.password) == (False, None)
    assert s.limits == UploadLimits(max_mb=MAX_UPLOAD_MB, max_rows=MAX_UPLOAD_ROWS)


def test_settings_from_environment_and_secrets():
    env = {"KNEEPOINT_HOSTED": "yes", "KNEEPOINT_PASSWORD": "from-env", "KNEEPOINT_MAX_UPLOAD_MB": "3",
           "KNEEPOINT_MAX_UPLOAD_ROWS": " 200 "}
    s = hosting_settings(env=env)
    assert s.hosted and s.password.get_secret_value() == "from-env" and s.password_source == "KNEEPOINT_PASSWORD"
    assert (s.limits.max_mb, s.limits.max_rows, s.limits.max_bytes) == (3, 200, 3 * 1024 * 1024)
    assert "from-env" not in repr(s)  # a password never shows in logs or tracebacks
    # secrets win over the environment; an empty password is no password
    s = hosting_settings(env=env, secrets={"password": "from-secrets", "hosted": False})
    assert not s.hosted and s.password.get_secret_value() == "from-secrets" and s.password_source == "secrets"
    assert hosting_settings(env={"KNEEPOINT_PASSWORD": ""}).password is None
    assert hosting_settings(env={}, secrets={"password": ""}).password is None


@pytest.mark.parametrize("env, secrets, message", [
    ({"KNEEPOINT_HOSTED": "maybe"}, None, "KNEEPOINT_HOSTED: 'maybe' is not on or off"),
    ({}, {"hosted": "sometimes"}, "secret 'hosted': 'sometimes' is not on or off"),
    ({"KNEEPOINT_MAX_UPLOAD_MB": "ten"}, None, "KNEEPOINT_MAX_UPLOAD_MB: 'ten' is not a whole number of megabytes"),
    ({"KNEEPOINT_MAX_UPLOAD_ROWS": "-5"}, None, "KNEEPOINT_MAX_UPLOAD_ROWS: '-5' is not a whole number of rows"),
    ({}, {"password": 1234}, "secret 'password': must be a string"),
])
def test_bad_settings_name_the_setting(env, secrets, message):
    with pytest.raises(SettingsError) as e:
        hosting_settings(env=env, secrets=secrets)
    assert message in str(e.value)


# --------------------------------------------------------------------------- overlays

@pytest.fixture
def shared(tmp_path):
    store = Store.hosted(tmp_path / "k.duckdb")
    yield store
    store.close()


def test_overlays_keep_each_sessions_rows_to_itself(shared, tmp_path):

    seed_file, seed_hash_before = shared.path, _file_hash(shared.path)
    before = shared.counts()
    a, b = shared.overlay(), shared.overlay()
    assert a.version() == b.version() == shared.version()  # nothing imported yet: caches are shared
    import_file(a, _csv("only-in-a", rows=3), name="a.csv")
    import_file(b, _csv("only-in-b"), name="b.csv")
    seen_a, seen_b = a.distinct("latency_points", "model"), b.distinct("latency_points", "model")
    assert "only-in-a" in seen_a and "only-in-b" not in seen_a
    assert "only-in-b" in seen_b and "only-in-a" not in seen_b
    assert a.user_counts()["latency_points"] == 3 and b.user_counts()["latency_points"] == 1
    assert a.counts()["latency_points"] == before["latency_points"] + 3
    # the shared store, its seed file and its directory are untouched
    assert shared.counts() == before and _file_hash(seed_file) == seed_hash_before
    assert not (tmp_path / "k-user" / "latency_points.parquet").exists()
    # versions differ once a session has rows of its own, so no cache hands a's data to b
    assert len({a.version(), b.version(), shared.version()}) == 3
    # a key already in the session's view is refused, and nothing is added
    with pytest.raises(ImportFailed, match="already in the store"):
        import_file(a, _csv("only-in-a", rows=1), name="again.csv")
    assert a.user_counts()["latency_points"] == 3
    # the book and the catalogue are built from the session's view
    from engine.profiles import ProfileBook

    assert "only-in-a" in ProfileBook.from_store(a).model_names
    assert "only-in-a" not in ProfileBook.from_store(b).model_names
    a.clear_user_rows("latency_points")
    assert a.user_counts()["latency_points"] == 0 and a.version() != shared.version()


def test_saved_scenarios_are_the_one_shared_write(shared, tmp_path):
    a, b = shared.overlay(), shared.overlay()
    a.saved_scenarios.save(load_scenario(DEFAULT_SCENARIO), name="team baseline", author="ana")
    assert b.saved_scenarios.names() == ["team baseline"] == shared.saved_scenarios.names()
    assert (tmp_path / "k-user" / "saved_scenarios.parquet").exists()  # kept beside the database, not in memory
    # and a fresh process's shared store sees it
    assert Store.hosted(tmp_path / "k.duckdb").saved_scenarios.names() == ["team baseline"]


def _databases(store) -> set[str]:
    return set(store._frame("SELECT database_name FROM duckdb_databases()")["database_name"])


def test_gone_overlays_free_their_database(shared):
    import gc

    a = shared.overlay()
    name = a.name
    a.clear_user_rows("latency_points")  # a write: the overlay's database is attached now
    assert a.attached and name in _databases(shared)
    del a
    gc.collect()
    b = shared.overlay()
    b.clear_user_rows("latency_points")  # the next attach detaches the ones that have gone
    databases = _databases(shared)
    assert name not in databases and b.name in databases
    with pytest.raises(StoreError, match="already one session's view"):
        b.overlay()


def test_an_overlay_that_only_reads_attaches_no_database(shared):
    before = _databases(shared)
    view = shared.overlay()
    assert view.counts() == shared.counts() and view.user_counts() == shared.user_counts()
    assert view.latency_points().equals(shared.latency_points()) and view.version() == shared.version()
    assert not view.attached and _databases(shared) == before  # reads cost the shared connection nothing
    import_file(view, _csv("mine"), name="mine.csv")  # the first write attaches its database
    assert view.attached and view.name in _databases(shared)
    assert view.user_counts()["latency_points"] == 1 and shared.user_counts()["latency_points"] == 0


def test_an_overlay_of_a_base_with_rows_reads_its_own_views(tmp_path):
    base = Store(tmp_path / "k.duckdb", user_dir=None)
    import_file(base, _csv("in-base"), name="base.csv")  # the base has user rows: its user tables differ
    view = base.overlay()
    assert view.user_counts()["latency_points"] == 0 and base.user_counts()["latency_points"] == 1
    assert "in-base" in view.distinct("latency_points", "model") and view.attached
    base.close()


# --------------------------------------------------------------------------- upload limits

def test_upload_over_the_size_limit_is_refused_before_parsing(shared):
    view = shared.overlay()
    big = _csv("too-big") + b"#" * (1024 * 1024)  # would not even parse: the limit speaks first
    with pytest.raises(ImportFailed) as e:
        import_upload(view, "csv", big, "big.csv", {"table": "latency_points"}, UploadLimits(max_mb=1))
    assert "big.csv: the file is 1.1 MB, over the upload limit of 1 MB" in str(e.value)
    assert view.user_counts()["latency_points"] == 0


def test_upload_over_the_row_limit_is_refused(shared):
    view = shared.overlay()
    limits = UploadLimits(max_rows=5)
    with pytest.raises(ImportFailed, match=r"many.csv: the file has 6 rows, over the upload limit of 5 rows"):
        import_upload(view, "csv", _csv("many", rows=6), "many.csv", {"table": "latency_points"}, limits)
    frame = pd.read_csv(io.BytesIO(_csv("many", rows=6)))
    parquet = io.BytesIO()
    frame.to_parquet(parquet)
    with pytest.raises(ImportFailed, match=r"many.parquet: the file has 6 rows, over the upload limit of 5 rows"):
        import_upload(view, "parquet", parquet.getvalue(), "many.parquet", {"table": "latency_points"}, limits)
    assert view.user_counts()["latency_points"] == 0
    # exactly at the limit is fine; a quoted line break inside a field is one row, not two
    assert import_upload(view, "csv", _csv("five", rows=5), "five.csv", {"table": "latency_points"}, limits).counts() \
        == {"latency_points": 5}
    quoted = _csv("quoted", rows=5).replace(b",measured,2026-11-22,\n", b',measured,2026-11-22,"two\nlines"\n')
    result = import_upload(view, "csv", quoted, "quoted.csv", {"table": "latency_points"}, limits)
    assert result.counts() == {"latency_points": 5}


# --------------------------------------------------------------------------- sessions in the app

@pytest.fixture
def hosted_env(monkeypatch):
    monkeypatch.setenv("KNEEPOINT_HOSTED", "1")
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)


def _profiles_session() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120).run()  # run first: AppTest drops the sidebar of a first
    at.switch_page(PROFILES).run()                             # run that starts on another page
    assert not at.exception, at.exception
    return at


def _upload(at: AppTest, name: str, data: bytes) -> None:
    open_profiles_tab(at, "Import and export")
    at.radio(key="imp_format").set_value("csv").run()
    at.selectbox(key="imp_table").set_value("latency_points").run()
    at.file_uploader(key="imp_file").set_value((name, data, "text/csv")).run()
    at.button(key="imp_go").click().run()
    assert not at.exception, at.exception


def _sidebar_rows(at: AppTest, table: str) -> int:
    return sidebar_row_counts(at)[table]


def test_two_sessions_with_different_uploads_do_not_see_each_others_data(hosted_env):
    a, b = _profiles_session(), _profiles_session()
    shared_rows = _sidebar_rows(a, "latency_points")
    assert "stay in this browser session" in " ".join(c.value for c in a.sidebar.caption)
    _upload(a, "a.csv", _csv("session-a", rows=2))
    assert [s.value for s in a.success] == ["Added 2 latency_points from a.csv."]
    _upload(b, "b.csv", _csv("session-b"))
    assert [s.value for s in b.success] == ["Added 1 latency_points from b.csv."]
    seen = {}
    for name, at in (("a", a), ("b", b)):  # the browse tab, and the partitions tab's book
        browse = set(open_profiles_tab(at, "Browse points").multiselect(key="prof_model").options)
        seen[name] = (browse, set(open_profiles_tab(at, "Partitions of a GPU").selectbox(key="slice_model").options))
    for mine, other in (("a", "b"), ("b", "a")):
        for models in seen[mine]:
            assert f"session-{mine}" in models and f"session-{other}" not in models
    assert _sidebar_rows(a, "latency_points") == shared_rows + 2
    assert _sidebar_rows(b, "latency_points") == shared_rows + 1
    # a newcomer sees the shared tables only, and the Design page still answers in every session
    c = _profiles_session()
    assert not {"session-a", "session-b"} & set(c.multiselect(key="prof_model").options)
    assert _sidebar_rows(c, "latency_points") == shared_rows
    for at in (a, c):
        at.switch_page(str(ROOT / "pages" / "design.py")).run()
        assert not at.exception and any(m.label == "SLA-bounded throughput" for m in at.metric)


def test_an_upload_over_the_limit_gets_a_message_in_the_app(hosted_env, monkeypatch):
    monkeypatch.setenv("KNEEPOINT_MAX_UPLOAD_ROWS", "3")
    at = open_profiles_tab(_profiles_session(), "Import and export")
    assert "3 rows" in " ".join(c.value for c in at.caption)
    _upload(at, "four.csv", _csv("session-four", rows=4))
    assert [e.value for e in at.error] == [
        "Nothing was imported. four.csv: the file has 4 rows, over the upload limit of 3 rows (split it, or ask "
        "whoever runs this app to raise KNEEPOINT_MAX_UPLOAD_ROWS)"]
    assert "session-four" not in open_profiles_tab(at, "Browse points").multiselect(key="prof_model").options


# --------------------------------------------------------------------------- password gate

def _gate_shown(at: AppTest) -> bool:
    return any(t.key == "gate_password" for t in at.text_input)


@pytest.mark.parametrize("source", ["env", "secrets"])
def test_password_gate(monkeypatch, source):
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    if source == "env":
        monkeypatch.setenv("KNEEPOINT_PASSWORD", "correct horse")
    else:
        at.secrets["password"] = "correct horse"
    at.run()
    assert not at.exception and _gate_shown(at)
    assert not at.metric and not sidebar_row_counts(at)  # no page, no database details before the password
    at.text_input(key="gate_password").set_value("wrong horse")
    at.button[0].click().run()
    assert _gate_shown(at) and [e.value for e in at.error] == ["That password is not right."] and not at.metric
    at.text_input(key="gate_password").set_value("correct horse")
    at.button[0].click().run()
    assert not at.exception and not _gate_shown(at)
    assert any(m.label == "SLA-bounded throughput" for m in at.metric)
    at.run()  # the session stays open on later reruns
    assert not _gate_shown(at) and at.metric


def test_no_password_no_gate(monkeypatch):
    monkeypatch.delenv("KNEEPOINT_PASSWORD", raising=False)
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and not _gate_shown(at) and at.metric


def test_bad_settings_keep_the_app_closed_with_a_message(monkeypatch):
    monkeypatch.setenv("KNEEPOINT_HOSTED", "perhaps")
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and not at.metric
    assert "KNEEPOINT_HOSTED: 'perhaps' is not on or off" in at.error[0].value


# --------------------------------------------------------------------------- read-only application directory

APP_FILES = ("app.py", "engine", "pages", "ui", "data/seed", ".streamlit")

_CHECK = textwrap.dedent("""
    import pathlib, sys
    from streamlit.testing.v1 import AppTest
    try:  # the emulation must really be read-only, or this test proves nothing
        pathlib.Path("probe").write_text("x")
        sys.exit("the application directory is writable")
    except OSError:
        pass
    for page in ("pages/design.py", "pages/profiles.py"):
        at = AppTest.from_file(str(pathlib.Path("app.py").resolve()), default_timeout=180).run()
        at.switch_page(str(pathlib.Path(page).resolve())).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        assert not at.error, (page, [e.value for e in at.error])
    print("database:", at.sidebar.caption[1].value.strip("`"))
""")


def readonly_prefix() -> list[str]:
    """Command prefix that runs a child without root's licence to write anywhere: as root, setpriv drops the
    capabilities that bypass file modes (as the container's non-root user has none); otherwise nothing."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: a read-only directory cannot be emulated")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-linux_immutable", "--"]


def make_readonly(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)


def make_writable(root: Path) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode | 0o200)


def test_app_starts_and_works_from_a_read_only_directory(tmp_path):
    app = tmp_path / "app"
    for rel in APP_FILES:
        src, dst = ROOT / rel, app / rel
        if src.is_dir():
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "secrets.toml"))
        elif src.exists():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEPOINT_")}
    env.update(KNEEPOINT_HOSTED="1", TMPDIR=str(temp), HOME=str(temp), PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=str(app))
    before = sorted(str(p.relative_to(app)) for p in app.rglob("*"))
    make_readonly(app)
    try:
        proc = subprocess.run([*readonly_prefix(), sys.executable, "-c", _CHECK], cwd=app, env=env,
                              capture_output=True, text=True, timeout=300)
    finally:
        make_writable(app)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # with data/ read-only and no KNEEPOINT_DB, the database was built in the temp directory
    assert f"database: {temp}" in proc.stdout and list(temp.rglob("kneepoint.duckdb"))
    assert sorted(str(p.relative_to(app)) for p in app.rglob("*")) == before
