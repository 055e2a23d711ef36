"""Load: concurrent headless browser sessions (Playwright driving Chromium) through the Design page of a hosted app.

Starts `streamlit run app.py` in hosted mode (KNEEPOINT_HOSTED=1, its own database in a temporary directory),
or uses --url for an app already running (the Docker container, say). One visitor first loads the page
alone: that cold load builds the database and the shared caches and is reported apart. Then all sessions
start at once, each in its own browser context (its own Streamlit session): it loads the Design page until
the headline metrics and the chart are drawn and the script has finished (the page load), then changes the
GPU count and waits for the rerun to put the new scenario in the URL (the rerun). An error is a Streamlit
exception on the page, a JavaScript error in it, or a wait that timed out.

    .venv/bin/python benchmarks/load_sessions.py [--sessions 20] [--url http://host:8501] [--json]

Goal: zero errors; the figure reported is the p95 page load. Exits 1 when any session had an error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
HEADLINE = "SLA-bounded throughput"


@dataclass
class Session:
    index: int
    load_s: Optional[float] = None
    rerun_s: Optional[float] = None
    errors: list[str] = field(default_factory=list)


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile (of 20 values, the 19th smallest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


# --------------------------------------------------------------------------- the server

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> Optional[float]:
    """User + system CPU time of a process so far (Linux /proc), to tell the server's share of the machine from
    the browsers'; None where /proc is not there."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


@contextmanager
def hosted_app(timeout_s: float = 120, options: tuple[str, ...] = ()) -> Iterator[tuple[str, int]]:
    """A hosted-mode `streamlit run app.py` on a free port, with its own database; yields its URL and pid.
    `options` are more streamlit options (`--runner.postScriptGC=true`), to measure a setting against another."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="kneepoint-load-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KNEEPOINT_")}
        env.update(KNEEPOINT_HOSTED="1", KNEEPOINT_DB=str(Path(tmp) / "kneepoint.duckdb"))
        log = open(Path(tmp) / "server.log", "w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port",
             str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none", *options], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                        break
                except OSError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    sys.exit("the app did not become healthy:\n" + (Path(tmp) / "server.log").read_text()[-3000:])
                time.sleep(0.3)
            yield url, proc.pid
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()


# --------------------------------------------------------------------------- one visitor

async def _settled(page, timeout_ms: float) -> None:
    """Wait until Streamlit has finished running the script (its 'Running...' status is gone)."""
    await page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=timeout_ms)


async def visit(browser, url: str, index: int, timeout_ms: float) -> Session:
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    out = Session(index)
    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.on("pageerror", lambda e: out.errors.append(f"JavaScript error: {e}"))
    try:
        t0 = time.perf_counter()
        await page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
        await page.get_by_text(HEADLINE).first.wait_for(state="visible", timeout=timeout_ms)
        await page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=timeout_ms)
        await _settled(page, timeout_ms)
        out.load_s = time.perf_counter() - t0
        before = page.url
        t1 = time.perf_counter()
        gpus = page.get_by_label("GPUs", exact=True)
        await gpus.fill("2")
        await gpus.press("Enter")
        await page.wait_for_function("u => location.href !== u", arg=before, timeout=timeout_ms)
        await _settled(page, timeout_ms)
        out.rerun_s = time.perf_counter() - t1
        if await page.locator('[data-testid="stException"]').count():
            out.errors.append("a Streamlit exception is shown on the page")
    except PlaywrightTimeout as e:
        out.errors.append(f"timed out: {str(e).splitlines()[0]}")
    finally:
        await context.close()
    return out


async def drive(url: str, sessions: int, timeout_s: float,
                pid: Optional[int] = None) -> tuple[Session, list[Session], Optional[float]]:
    """The cold visit, then `sessions` visits at once; with the server's pid, its CPU seconds during the latter."""
    from playwright.async_api import async_playwright

    args = ["--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]
    if os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True, args=args)
        try:
            cold = await visit(browser, url, 0, timeout_s * 1000)
            cpu0 = cpu_seconds(pid) if pid else None
            runs = await asyncio.gather(*(visit(browser, url, i, timeout_s * 1000) for i in range(1, sessions + 1)))
            cpu1 = cpu_seconds(pid) if pid else None
        finally:
            await browser.close()
    return cold, list(runs), (cpu1 - cpu0 if cpu0 is not None and cpu1 is not None else None)


def summary(cold: Session, runs: list[Session], server_cpu_s: Optional[float] = None) -> dict:
    loads = [r.load_s for r in runs if r.load_s is not None]
    reruns = [r.rerun_s for r in runs if r.rerun_s is not None]
    return {
        "sessions": len(runs),
        "errors": sum(len(r.errors) for r in runs) + len(cold.errors),
        "cold_load_s": cold.load_s,
        "load_p50_s": sorted(loads)[len(loads) // 2] if loads else None,
        "load_p95_s": p95(loads) if loads else None,
        "load_max_s": max(loads) if loads else None,
        "rerun_p95_s": p95(reruns) if reruns else None,
        "server_cpu_s": server_cpu_s,
        "cpus": os.cpu_count(),
        "runs": [asdict(r) for r in [cold, *runs]],
    }


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=20, help="browser sessions started at once (default 20)")
    ap.add_argument("--url", help="an app already running; default: start one in hosted mode")
    ap.add_argument("--timeout", type=float, default=300, help="seconds any one wait may take (default 300)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of lines")
    args = ap.parse_args(argv)
    if args.sessions < 1:
        ap.error("--sessions must be at least 1")
    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    if args.url:
        cold, runs, cpu = asyncio.run(drive(args.url.rstrip("/"), args.sessions, args.timeout))
    else:
        with hosted_app() as (url, pid):
            cold, runs, cpu = asyncio.run(drive(url, args.sessions, args.timeout, pid))
    result = summary(cold, runs, cpu)
    if args.json:
        print(json.dumps(result))
    else:
        fmt = lambda v: "-" if v is None else f"{v:6.2f} s"  # noqa: E731
        print(f"cold page load (first visitor)       {fmt(result['cold_load_s'])}")
        print(f"{result['sessions']} concurrent sessions, page load: p50 {fmt(result['load_p50_s'])}   "
              f"p95 {fmt(result['load_p95_s'])}   max {fmt(result['load_max_s'])}")
        print(f"rerun after changing the GPU count:  p95 {fmt(result['rerun_p95_s'])}")
        if result["server_cpu_s"] is not None:
            print(f"server CPU during the concurrent sessions: {result['server_cpu_s']:.1f} s "
                  f"({result['server_cpu_s'] / result['sessions']:.2f} s a session); the browsers had the rest")
        print(f"errors: {result['errors']}   ({result['cpus']} CPUs shared by server and browsers)")
        for r in [cold, *runs]:
            for e in r.errors:
                print(f"  session {r.index}: {e}")
    return 1 if result["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
