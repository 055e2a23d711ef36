"""Store build, rebuild (missing, corrupt, stale), location rules and seed-row validation."""

import os
from pathlib import Path

import pytest

from engine.seed.records import TABLES
from engine.seed.reader import SeedError
from engine.store import ENV_DB, Store, build_database, resolve_db_path
from engine.store.build import seed_hash as build_seed_hash


def test_session_store_has_every_table(store):
    counts = store.counts()
    assert set(counts) == set(TABLES)
    assert all(n > 0 for n in counts.values()), counts


def test_every_row_has_provenance(store):
    for name in TABLES:
        df = store.table(name)
        assert df["source"].str.len().min() >= 3, name
    kinds = set(store.table("latency_points")["kind"])
    assert kinds <= {"measured", "published", "derived"}


def test_missing_file_is_built(tmp_path, caplog):
    path = tmp_path / "k.duckdb"
    with caplog.at_level("WARNING", logger="kneepoint.store"):
        s = Store(path)
    assert path.exists() and "does not exist" in s.rebuilt_because
    assert "rebuilding the profile database" in caplog.text
    assert s.counts()["gpus"] >= 8
    s.close()
    again = Store(path)  # an up-to-date file is reused, not rebuilt
    assert again.rebuilt_because is None
    again.close()


def test_corrupt_file_is_moved_aside_and_rebuilt(tmp_path):
    path = tmp_path / "k.duckdb"
    Store(path).close()
    good = path.read_bytes()
    corrupt = good[:4096] + b"\xff" * (len(good) - 4096)  # the DuckDB header survives, every block is garbage
    path.write_bytes(corrupt)
    s = Store(path)
    assert "not a readable DuckDB database" in s.rebuilt_because and "moved to k.duckdb.corrupt-" in s.rebuilt_because
    assert s.counts()["mig_profiles"] > 0
    s.close()
    (aside,) = tmp_path.glob("k.duckdb.corrupt-*")  # kept, byte for byte, for whoever wants to look
    assert aside.read_bytes() == corrupt


def test_changed_seed_triggers_rebuild(tmp_path, seed_copy):
    path = tmp_path / "k.duckdb"
    Store(path, seed_dir=seed_copy).close()
    gpus = seed_copy / "gpus.csv"
    gpus.write_text(gpus.read_text().replace("SXM2 (DGX-1) variant", "SXM2 variant (edited)"))
    s = Store(path, seed_dir=seed_copy)
    assert "seed tables have changed" in s.rebuilt_because
    assert s.table("gpus")["note"].str.contains("SXM2 variant (edited)", regex=False).any()
    s.close()


def test_env_overrides_location(tmp_path):
    assert resolve_db_path(tmp_path, env={ENV_DB: "/somewhere/x.duckdb"}) == Path("/somewhere/x.duckdb")
    assert resolve_db_path(tmp_path, env={}) == tmp_path / "kneepoint.duckdb"


def test_read_only_data_dir_uses_temp_dir(tmp_path):
    if os.geteuid() == 0:
        readonly = Path("/proc")  # root ignores mode bits; nobody can create files in /proc
    else:
        readonly = tmp_path / "ro"
        readonly.mkdir()
        readonly.chmod(0o555)
    path = resolve_db_path(readonly, env={})
    assert not str(path).startswith(str(readonly))
    assert path.name == "kneepoint.duckdb"
    s = Store(path)
    assert s.counts()["gpus"] > 0
    s.close()


def _break(seed: Path, table: str, line: int, column: str, value: str) -> None:
    lines = (seed / f"{table}.csv").read_text().splitlines()
    import csv
    import io

    header = next(csv.reader([lines[0]]))
    row = next(csv.reader([lines[line - 1]]))
    row[header.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(row)
    lines[line - 1] = buf.getvalue()
    (seed / f"{table}.csv").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("table, column, value, message", [
    ("gpus", "tdp_w", "lots", "gpus.csv: line 3: field 'tdp_w'"),
    ("latency_points", "kind", "guessed", "latency_points.csv: line 3: field 'kind'"),
    ("latency_points", "batch", "0", "latency_points.csv: line 3: field 'batch'"),
    ("mig_profiles", "profile", "huge", "mig_profiles.csv: line 3: field 'profile'"),
    ("models", "domain", "audio", "models.csv: line 3: field 'domain'"),
])
def test_bad_seed_row_stops_build_and_writes_nothing(tmp_path, seed_copy, table, column, value, message):
    _break(seed_copy, table, 3, column, value)
    path = tmp_path / "k.duckdb"
    with pytest.raises(SeedError) as e:
        build_database(path, seed_copy)
    assert message in str(e.value) and repr(value) in str(e.value)
    assert not path.exists() and list(tmp_path.iterdir()) == [seed_copy]


def test_duplicate_key_is_rejected(tmp_path, seed_copy):
    gpus = seed_copy / "gpus.csv"
    lines = gpus.read_text().splitlines()
    gpus.write_text("\n".join(lines + [lines[1]]) + "\n")
    with pytest.raises(SeedError, match=r"gpus.csv: line \d+: duplicate of line 2"):
        build_database(tmp_path / "k.duckdb", seed_copy)


def test_missing_seed_table_is_named(tmp_path, seed_copy):
    (seed_copy / "models.csv").unlink()
    with pytest.raises(SeedError, match="models.csv: missing"):
        Store(tmp_path / "k.duckdb", seed_dir=seed_copy)


def test_latency_filters(store):
    df = store.latency_points(model=["resnet50"], sku=["T4-16GB"])
    assert len(df) > 0 and set(df["model"]) == {"resnet50"} and set(df["sku"]) == {"T4-16GB"}
    assert store.latency_points(model=["no-such-model"]).empty


def _point(**kw):
    from engine.seed.records import LatencyPointRow

    base = dict(model="resnet50", sku="A100-SXM4-40GB", partition="1g.5gb", precision="fp16", framework="onnxruntime",
                batch=1, mean_ms=2.0, throughput=500.0, kind="measured", source="test", measured_on="2026-11-22")
    base.update(kw)
    return LatencyPointRow(**base)


def test_user_rows_persist_and_survive_rebuild(tmp_path, seed_copy):
    path = tmp_path / "k.duckdb"
    s = Store(path, seed_dir=seed_copy)
    before = len(s.latency_points(model=["resnet50"]))
    assert s.add_rows("latency_points", [_point(batch=1), _point(batch=2, mean_ms=3.0)]) == 2
    assert len(s.latency_points(model=["resnet50"])) == before + 2
    other = Store(path, seed_dir=seed_copy)  # another process's view
    assert other.user_counts()["latency_points"] == 2
    other.add_rows("latency_points", [_point(batch=4, mean_ms=5.0)])
    assert s.user_counts()["latency_points"] == 3  # the first handle sees the second's write
    (seed_copy / "gpus.csv").write_text((seed_copy / "gpus.csv").read_text().replace("PCIe card", "PCIe board"))
    rebuilt = Store(path, seed_dir=seed_copy)
    assert rebuilt.rebuilt_because and rebuilt.user_counts()["latency_points"] == 3
    assert rebuilt.clear_user_rows("latency_points") == 3 and s.user_counts()["latency_points"] == 0


def test_add_rows_is_all_or_nothing(tmp_path):
    s = Store(tmp_path / "k.duckdb")
    s.add_rows("latency_points", [_point(batch=1)])
    with pytest.raises(Exception, match="already in the store"):
        s.add_rows("latency_points", [_point(batch=8), _point(batch=1)])
    with pytest.raises(SeedError, match="duplicate"):
        s.add_rows("latency_points", [_point(batch=16), _point(batch=16)])
    assert s.user_counts()["latency_points"] == 1
    published = s.latency_points(model=["resnet50"], sku=["T4-16GB"]).iloc[0]
    clash = _point(sku="T4-16GB", partition="full", precision=published["precision"],
                   framework=published["framework"], batch=int(published["batch"]))
    with pytest.raises(Exception, match="already in the store"):
        s.add_rows("latency_points", [clash])
    with pytest.raises(Exception, match="importable tables"):
        s.add_rows("gpus", [])


def test_in_memory_user_rows_are_private(tmp_path):
    path = tmp_path / "k.duckdb"
    a, b = Store(path, user_dir=None), Store(path, user_dir=None)
    a.add_rows("latency_points", [_point()])
    assert a.user_counts()["latency_points"] == 1 and b.user_counts()["latency_points"] == 0


def test_version_hashes_the_seed_again_only_when_a_seed_file_changes(tmp_path, seed_copy, monkeypatch):
    import engine.store as store_module

    store = Store(tmp_path / "k.duckdb", seed_dir=seed_copy)
    first = store.version()
    hashed = []
    monkeypatch.setattr(store_module, "seed_hash", lambda d: hashed.append(d) or build_seed_hash(d))
    assert store.version() == store.version() == first and hashed == []  # stats unchanged: nothing read
    path = seed_copy / "gpus.csv"
    path.write_text(path.read_text() + "\n")  # a changed file: read and hashed again, a new version
    assert store.version() != first and hashed == [seed_copy]
    store.close()
