"""Hosted soak: many Streamlit sessions, opened over the protocol (no browser), through a hosted app.

Starts `streamlit run app.py` in hosted mode (KNEEPOINT_HOSTED=1, its own database; see load_sessions.hosted_app)
and, after one cold session alone, opens `--sessions` sessions in batches of `--batch` at once. Each session is what
a browser's first page load asks of the server: a websocket on /_stcore/stream, a rerun of the root page (the Design
page, with its headline and charts), every message up to the script-finished one, then the socket is closed. No
browser runs, so the machine's CPUs go to the server and the figures are the server's own.

After every window of `--window` sessions it prints the server's CPU seconds per session in that window (/proc), its
resident memory (VmRSS) and the window's first-load p50/p95, with the load average. Goals (issue 19): CPU per session
flat as sessions accumulate (no growth after 200 sessions), memory bounded (the last window's RSS within 20 % of
the RSS after 100 sessions), first-load p95 <= 2 s with 20 sessions at once.

    .venv/bin/python benchmarks/hosted_soak.py [--sessions 500] [--batch 20] [--window 100] [--json]
        [--option runner.postScriptGC=true ...]   (a Streamlit option, to run a reference setting side by side)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_sessions import cpu_seconds, hosted_app, p95  # noqa: E402

FINISHED = ForwardMsg.FINISHED_SUCCESSFULLY


@dataclass
class Visit:
    load_s: Optional[float] = None
    errors: list[str] = field(default_factory=list)


def rss_mib(pid: int) -> Optional[float]:
    """Resident memory of a process in MiB (Linux /proc), None where it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def visit(url: str, timeout_s: float) -> Visit:
    """One session's first page load: rerun the root page and read every message until the run has finished."""
    out = Visit()
    t0 = time.perf_counter()
    try:
        with connect(url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"],
                     open_timeout=timeout_s, max_size=None) as socket:
            message = BackMsg()
            message.rerun_script.page_name = ""  # the root: app.py's default page (Design)
            socket.send(message.SerializeToString())
            deadline = time.monotonic() + timeout_s
            while True:
                frame = socket.recv(timeout=max(deadline - time.monotonic(), 0.01))
                if not isinstance(frame, bytes):
                    continue
                msg = ForwardMsg.FromString(frame)
                kind = msg.WhichOneof("type")
                if kind == "delta" and msg.delta.WhichOneof("type") == "new_element" \
                        and msg.delta.new_element.WhichOneof("type") == "exception":
                    out.errors.append(f"exception on the page: {msg.delta.new_element.exception.message[:200]}")
                elif kind == "script_finished":
                    if msg.script_finished == FINISHED:
                        out.load_s = time.perf_counter() - t0
                        return out
                    if msg.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        out.errors.append(f"script finished with status {msg.script_finished}")
                        return out
    except Exception as e:  # noqa: BLE001 - a timeout or a dropped socket is an error of this visit, not the run
        out.errors.append(f"{type(e).__name__}: {e}")
    return out


def batch(url: str, n: int, timeout_s: float) -> list[Visit]:
    """`n` visits at once, each in its own thread (its own session)."""
    visits: list[Visit] = [Visit() for _ in range(n)]

    def run(i: int) -> None:
        visits[i] = visit(url, timeout_s)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return visits


def soak(url: str, pid: int, sessions: int, size: int, window: int, timeout_s: float, echo) -> dict:
    cold = visit(url, timeout_s)
    rows = []
    done = 0
    cpu0, t0, loads, errors = cpu_seconds(pid), time.perf_counter(), [], []
    while done < sessions:
        visits = batch(url, min(size, sessions - done), timeout_s)
        done += len(visits)
        loads += [v.load_s for v in visits if v.load_s is not None]
        errors += [e for v in visits for e in v.errors]
        if done % window == 0 or done == sessions:
            cpu1, t1 = cpu_seconds(pid), time.perf_counter()
            n = done - (rows[-1]["sessions"] if rows else 0)
            row = {"sessions": done, "cpu_s_per_session": (cpu1 - cpu0) / n, "rss_mib": rss_mib(pid),
                   "load_p50_s": statistics.median(loads) if loads else None, "load_p95_s": p95(loads) if loads else None,
                   "sessions_per_s": n / (t1 - t0), "errors": len(errors), "loadavg_1m": os.getloadavg()[0]}
            rows.append(row)
            echo(row)
            cpu0, t0, loads = cpu1, t1, []
    return {"cold_load_s": cold.load_s, "cold_errors": cold.errors, "rows": rows, "errors": errors}


def verdict(result: dict, window: int) -> list[str]:
    rows = result["rows"]
    at = {r["sessions"]: r for r in rows}
    lines = []
    split = 200 if 200 in at and rows[-1]["sessions"] > 200 else rows[len(rows) // 2 - 1]["sessions"]
    early = [r["cpu_s_per_session"] for r in rows if r["sessions"] <= split]
    later = [r["cpu_s_per_session"] for r in rows if r["sessions"] > split]
    if early and later:  # means over windows: one window's figure moves with the machine's other load
        a, b = statistics.mean(early), statistics.mean(later)
        lines.append(f"CPU per session: {a:.3f} s over the first {split} sessions, {b:.3f} s after "
                     f"(ratio {b / a:.2f}; goal: no growth, ~1.0; windows: "
                     f"{', '.join(f'{r:.3f}' for r in early + later)} s)")
    first = at.get(100) or rows[0]
    last = rows[-1]
    if first is not last and first["rss_mib"] and last["rss_mib"]:
        lines.append(f"memory: {last['rss_mib']:.0f} MiB after {last['sessions']} sessions vs {first['rss_mib']:.0f} "
                     f"MiB after {first['sessions']} (ratio {last['rss_mib'] / first['rss_mib']:.2f}; goal <= 1.20)")
    p95s = [r["load_p95_s"] for r in rows if r["load_p95_s"] is not None]
    if p95s:
        lines.append(f"first-load p95 per window of {window}: {', '.join(f'{v:.2f}' for v in p95s)} s "
                     f"(worst {max(p95s):.2f} s; goal <= 2 s)")
    lines.append(f"errors: {len(result['errors']) + len(result['cold_errors'])}")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=500)
    ap.add_argument("--batch", type=int, default=20, help="sessions opened at once (default 20)")
    ap.add_argument("--window", type=int, default=100, help="sessions per printed row (a multiple of --batch)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one session may take (default 300)")
    ap.add_argument("--option", action="append", default=[], metavar="NAME=VALUE",
                    help="a Streamlit option for the server, e.g. runner.postScriptGC=true (repeatable)")
    ap.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = ap.parse_args(argv)
    if args.sessions < 1 or args.batch < 1 or args.window % args.batch:
        ap.error("need --sessions >= 1, --batch >= 1 and --window a multiple of --batch")
    options = tuple(f"--{o}" for o in args.option)

    def echo(row: dict) -> None:
        if not args.json:
            print(f"{row['sessions']:>6} sessions  CPU {row['cpu_s_per_session']:.3f} s/session  RSS "
                  f"{row['rss_mib']:.0f} MiB  load p50 {row['load_p50_s']:.2f} s p95 {row['load_p95_s']:.2f} s  "
                  f"{row['sessions_per_s']:.2f} sessions/s  errors {row['errors']}  "
                  f"loadavg {row['loadavg_1m']:.2f}", flush=True)

    if not args.json:
        print(f"hosted soak: {args.sessions} sessions in batches of {args.batch}, options {list(options) or 'none'}, "
              f"{os.cpu_count()} CPUs", flush=True)
    with hosted_app(options=options) as (url, pid):
        result = soak(url, pid, args.sessions, args.batch, args.window, args.timeout, echo)
    result.update(options=list(options), batch=args.batch, verdict=verdict(result, args.window))
    if args.json:
        print(json.dumps(result))
    else:
        print(f"cold first load (alone): {result['cold_load_s'] or float('nan'):.2f} s")
        for line in result["verdict"]:
            print(line)
        for e in sorted(set(result["errors"] + result["cold_errors"]))[:10]:
            print(f"  {e}")
    return 1 if result["errors"] or result["cold_errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
