"""Arrival traces never come from a server path: a scenario naming a file is refused without reading it, the CLI
reads only the user's own regular file (size-capped), and an upload is parsed from bytes; no error echoes content."""

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.contract import MAX_TRACE_TIMESTAMPS
from engine.scenario import ScenarioError, load_scenario
from engine.io.traces import MAX_TRACE_BYTES, TraceError, parse_trace_bytes, read_trace_file
from engine.io.urlstate import _pack, decode_many

ROOT = Path(__file__).resolve().parents[1]
BASE = {"model": "resnet50", "gpu": {"sku": "A100-SXM4-40GB"}}
#: how long a reader may take before the test calls it blocked: generous for a shared CI machine, and only a guard
BLOCKED_AFTER_S = 20


def with_arrival(**arrival) -> dict:
    return {**BASE, "workload": {"arrival": arrival}}


def secrets_in(path: str) -> list[str]:
    """Pieces of a file that must never appear in a message (its lines or NUL-separated entries)."""
    data = Path(path).read_bytes().decode("utf-8", "replace")
    return [piece for piece in data.replace("\0", "\n").splitlines() if len(piece) >= 6]


@pytest.mark.parametrize("path", ["/etc/passwd", "/proc/self/environ"])
def test_a_scenario_naming_a_server_file_is_refused_without_its_content(path):
    if not os.access(path, os.R_OK):
        pytest.skip(f"{path} is not readable here")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(with_arrival(kind="trace", trace_csv=path))
    message = str(caught.value)
    assert message.startswith("workload.arrival.trace_csv: ")
    assert "--trace" in message and "upload" in message
    assert not [piece for piece in secrets_in(path) if piece in message]
    assert "\n" not in message


def test_a_crafted_compare_link_with_a_trace_file_is_refused():
    """The Compare page's pins arrive in the link: each is validated by load_scenario before anything runs."""
    token = _pack([with_arrival(kind="trace", trace_csv="/etc/passwd")])
    (pin,) = decode_many(token)
    with pytest.raises(ScenarioError, match="trace_csv is not accepted"):
        load_scenario(pin)


def test_the_simulator_refuses_a_trace_file_before_reading_anything(store):
    from engine.analytic import Context
    from engine.sim import simulate

    with pytest.raises(ScenarioError, match="trace_csv"):
        simulate(with_arrival(kind="trace", trace_csv="/dev/zero"), 100, ctx=Context.from_store(store))


def test_a_null_trace_csv_from_an_earlier_saved_scenario_still_loads():
    scenario = load_scenario(with_arrival(kind="poisson", trace_csv=None))
    assert "trace_csv" not in scenario.to_json()


def test_inline_timestamps_are_bounded_finite_non_negative_and_sorted():
    assert load_scenario(with_arrival(kind="trace", timestamps=[0.3, 0.1, 0.2])).workload.arrival.timestamps == \
        [0.1, 0.2, 0.3]
    for bad, field in (([0.1, float("nan")], "timestamps[1]"), ([-1.0, 2.0], "timestamps[0]"),
                       ([0.0, 1e300], "timestamps[1]")):
        with pytest.raises(ScenarioError, match=re.escape(f"workload.arrival.{field}: ")):
            load_scenario(with_arrival(kind="trace", timestamps=bad))
    with pytest.raises(ScenarioError, match="at most 50000 items"):
        load_scenario(with_arrival(kind="trace", timestamps=[float(i) for i in range(MAX_TRACE_TIMESTAMPS + 1)]))
    with pytest.raises(ScenarioError, match="needs at least two distinct arrival timestamps"):
        load_scenario(with_arrival(kind="trace"))


def _returns_quickly(call) -> BaseException | None:
    """Run `call` in a thread; the error it raised, or a failure if it is still running (blocked)."""
    outcome: dict = {}

    def target():
        try:
            call()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            outcome["error"] = e

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BLOCKED_AFTER_S)
    assert not thread.is_alive(), "the trace reader blocked"
    return outcome.get("error")


def test_the_cli_reader_refuses_a_fifo_without_blocking(tmp_path):
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)  # nobody writes to it: a plain open() would wait forever
    error = _returns_quickly(lambda: read_trace_file(fifo))
    assert isinstance(error, TraceError) and "not a regular file" in str(error) and str(fifo) in str(error)


def test_the_cli_reader_refuses_dev_zero_without_reading_it():
    error = _returns_quickly(lambda: read_trace_file("/dev/zero"))
    assert isinstance(error, TraceError) and "not a regular file" in str(error)


def test_the_cli_reader_refuses_a_file_over_the_size_cap(tmp_path):
    big = tmp_path / "big.csv"
    with open(big, "wb") as f:
        f.truncate(MAX_TRACE_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(TraceError, match="the limit is"):
        read_trace_file(big)


def test_the_cli_reader_names_a_missing_file(tmp_path):
    with pytest.raises(TraceError, match="cannot read"):
        read_trace_file(tmp_path / "nope.csv")


def test_the_upload_parser_reads_a_good_trace():
    data = b"# exported by a load balancer\ntimestamp_s,bytes\n100.5,10\n\n100.25,20\n101.0,30\n"
    assert parse_trace_bytes(data, "lb.csv") == [100.5, 100.25, 101.0]
    assert parse_trace_bytes(b"0\n0.001\n0.002\n") == [0.0, 0.001, 0.002]


@pytest.mark.parametrize("data, message", [
    (b"t\n0.1\nSECRET-TOKEN-123\n", "up.csv: line 3: column 1 is not a number"),
    (b"t\n0.1\n-5\n", "up.csv: line 3: a timestamp must be a finite number"),
    (b"t\n0.1\nnan\n", "up.csv: line 3: a timestamp must be a finite number"),
    (b"t\n0.1\n1e400\n", "up.csv: line 3: a timestamp must be a finite number"),
    (b"password=SECRET-TOKEN-123,x\n1,2\n", "up.csv: line 1: no timestamp column"),
    (b"\xff\xfeSECRET-TOKEN-123", "up.csv: not UTF-8"),
    (b"\n# only a comment\n", "up.csv: no timestamps"),
])
def test_the_upload_parser_names_the_bad_line_and_never_its_content(data, message):
    with pytest.raises(TraceError) as caught:
        parse_trace_bytes(data, "up.csv")
    assert str(caught.value).startswith(message)
    assert "SECRET" not in str(caught.value)


def test_the_upload_parser_refuses_more_rows_than_a_scenario_carries():
    data = "\n".join(str(i) for i in range(MAX_TRACE_TIMESTAMPS + 1)).encode()
    with pytest.raises(TraceError, match="over the limit"):
        parse_trace_bytes(data, "long.csv")


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_cli_simulate_reads_a_local_trace_and_refuses_a_fifo(tmp_path):
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(BASE))
    trace = tmp_path / "trace.csv"
    trace.write_text("arrival\n" + "".join(f"{i * 0.002:.6f}\n" for i in range(1500)))
    done = run_cli("simulate", str(scenario), "--trace", str(trace), "--json", "--no-progress")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["workload"] == "trace" and out["n_requests"] == 1500
    assert out["rate_rps"] == pytest.approx(500, rel=0.01)  # played at its own pace: one request per 2 ms
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    done = run_cli("simulate", str(scenario), "--trace", str(fifo))
    assert done.returncode == 2 and "not a regular file" in done.stderr and "Traceback" not in done.stderr
    scenario.write_text(json.dumps(with_arrival(kind="trace", trace_csv="/etc/passwd")))
    done = run_cli("simulate", str(scenario), "--requests", "100")
    assert done.returncode == 2 and "trace_csv is not accepted" in done.stderr and "root:" not in done.stderr


def test_a_workload_dict_naming_a_trace_file_is_a_sim_error(store):
    from engine.analytic import Context, build_design
    from engine.sim import SimError, simulate_design

    ctx = Context.from_store(store)
    design = build_design(load_scenario(BASE, ctx.book), ctx)
    with pytest.raises(SimError, match="^workload: trace_csv is not accepted") as caught:
        simulate_design(design, 100, ctx=ctx, workload={"kind": "trace", "trace_csv": "/etc/passwd"})
    assert "root:" not in str(caught.value)


def test_a_search_space_whose_base_names_a_trace_file_is_refused(store):
    from engine.analytic import Context
    from engine.search.space import SearchError, expand, parse_space

    space = {"base": with_arrival(kind="trace", trace_csv="/proc/self/environ")}
    with pytest.raises(SearchError, match=r"^base\.workload\.arrival\.trace_csv: trace_csv is not accepted"):
        expand(parse_space(space), Context.from_store(store).book)
