"""First render of every page in a real browser: the app (headless, a free port) and Chromium.

For each page of app.py (read from its st.Page(..., url_path=...) list) a fresh server is started as `make run`
starts it (`python -m ui.serve`, whose warm-up run on the root counts in "server ready"; --plain: a bare
`streamlit run app.py`), and the page is opened by its deep link as the first browser ("cold": right after a
start), then in a second browser context, a new Streamlit session on the now-started server ("warm"), and in new
tabs of a browser that has been there before ("new tab": Streamlit's 4.7 MB Plotly script is in its cache). A
render counts as done when Streamlit's running indicator is gone and the page's main content (MARKERS: its first
chart or metric) is on screen; every wait is on that state, never a fixed sleep. The profile database is built
once before the first server, so no figure pays for building it (benchmarks/store_build.py times that).

Goal (issue 18): <= 5 s cold and <= 2 s warm, every page. The table also says whether Streamlit's
"Page not found" dialog showed up on the deep link.

The floor: in the same run, the same browser and the same way, the two pages of benchmarks/render_floor/ (a bare
Streamlit app with the app's settings: a title and a metric; a title, a metric and one 3-point Plotly chart) are
measured first, as reference rows. They are what Streamlit alone costs on this machine, so a page can be no faster
than the floor page of its kind (a metric marker or a chart marker), and the table prints each page's excess over
it ("over floor", warm). On a loaded two-core machine the chart floor alone can be above the 2 s warm goal.

    .venv/bin/python benchmarks/page_first_render.py [--pages ,cost-model] [--plain] [--warm-runs 3] [--root DIR]
                                                     [--no-floor]
    (--pages: url paths, an empty one for the default page; --root: serve another checkout of the app, e.g. a
    `git archive` of main, to compare side by side in the same conditions; repeat it (--root A --root B) to
    measure several checkouts in one run, each page of each root in turn)
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from ui.serve import app_url_paths  # noqa: E402  (this checkout's, whichever checkout is served)

FLOOR = Path(__file__).resolve().parent / "render_floor"  # the bare Streamlit app of the floor rows
CHROMIUM = "/usr/bin/chromium"
COLD_GOAL_S, WARM_GOAL_S = 5.0, 2.0
TIMEOUT_MS = 120_000  # a render that takes longer is a failure, not a figure

# url_path -> a concrete element of the page's main content (its first chart or metric, by the element's key)
MARKERS = {
    "": '[data-testid="stMetric"]',  # Design, the default page
    "compare-designs": ".st-key-cmp_curves [data-testid=stPlotlyChart]",
    "design-search": ".st-key-srch_run",
    "partition-plans": ".st-key-par_pdf [data-testid=stPlotlyChart]",
    "preprocessing-view": ".st-key-pp_scaling [data-testid=stPlotlyChart]",
    "rpc-path": ".st-key-rpc_breakdown [data-testid=stPlotlyChart]",
    "tenants": '[data-testid="stMetric"]',
    "cost-model": ".st-key-cost_split [data-testid=stPlotlyChart]",
    "profile-store": ".st-key-prof_chart [data-testid=stPlotlyChart]",
    "reports": ".st-key-rep_title",
}
# url_path -> the deep link's query: Compare is opened on the PREBA preset's designs, as a shared link would
QUERIES = {"compare-designs": lambda: "c=" + _preba_token()}
FALLBACK = '[data-testid="stPlotlyChart"], [data-testid="stMetric"]'
# the floor's pages (benchmarks/render_floor/app.py): url path -> marker; a page's floor is the one of its marker's kind
FLOOR_PAGES = {"": '[data-testid="stMetric"]', "floor-chart": ".st-key-floor_chart [data-testid=stPlotlyChart]"}


def floor_of(marker: str) -> str:
    """The floor page a page whose render marker is `marker` compares with: the chart floor for a chart marker."""
    return "floor-chart" if "stPlotlyChart" in marker else ""


def app_pages() -> list[str]:
    """The url_path of every page the served checkout's app.py lists, in its order; the default page as ""."""
    return app_url_paths(ROOT / "app.py")


def _preba_token() -> str:
    sys.path.insert(0, str(ROOT))
    from engine.io.urlstate import encode_many
    from engine.scenario import load_scenario
    from engine.reproduce.registry import build_preset

    return encode_many([load_scenario(d) for d in build_preset("preba", None)])


def use_root(root: Path) -> None:
    """Serve the app of checkout `root` (its own engine and pages, run from there)."""
    global ROOT
    ROOT = root.resolve()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(db: str, serve: bool, root: Path | None = None) -> tuple[subprocess.Popen, str, float]:
    """The app of checkout `root` (default ROOT) on a free port, as `make run` starts it (`python -m ui.serve`: ready
    once its warm-up run on the root is done) or with `serve` False as a plain `streamlit run app.py` (ready when its
    health check answers); its URL and the seconds until it was ready."""
    root = root or ROOT
    port = free_port()
    t0 = time.perf_counter()
    launch = ["ui.serve"] if serve else ["streamlit", "run", "app.py"]
    proc = subprocess.Popen(
        [sys.executable, "-m", *launch, "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=root, env=dict(os.environ, KNEEPOINT_DB=db), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if serve else subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.05)
    else:
        proc.kill()
        sys.exit("streamlit did not become healthy in 120 s")
    while serve:
        line = proc.stderr.readline()
        if not line or line.startswith("Kneepoint:"):
            if "first run done" not in line:
                sys.exit(f"ui.serve: {line!r}")
            break
    return proc, url, time.perf_counter() - t0


def _script_finished(payload) -> bool:
    """Whether a websocket frame is Streamlit's message that a script run finished."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    if isinstance(payload, str):
        return False
    try:
        return ForwardMsg.FromString(payload).WhichOneof("type") == "script_finished"
    except Exception:  # a frame that is not one ForwardMsg
        return False


def first_render(browser, url: str, marker: str, context=None) -> tuple[float, float, bool]:
    """Seconds from navigating a new Streamlit session to `url` until the page's marker is visible and no script
    runs; seconds until the server said the page's script run finished (the rest is the browser drawing it); and
    whether the 'Page not found' dialog was shown on the way. The session is a new browser context (empty browser
    cache), or a new tab of `context` (the browser's cache holds Streamlit's scripts from an earlier visit)."""
    own = context is None
    if own:
        context = browser.new_context(viewport={"width": 1400, "height": 1200})
    page = context.new_page()
    finished = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: (
        finished.append(time.perf_counter()) if not finished and _script_finished(payload) else None)))
    t0 = time.perf_counter()
    page.goto(url, wait_until="commit")
    try:
        page.locator(marker).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    except Exception:  # a marker that no longer matches the page: name the keys it has, to fix MARKERS
        keys = page.evaluate("() => [...document.querySelectorAll('[class*=st-key-]')].map(e => e.className)")
        sys.exit(f"{url}: no {marker!r} after {TIMEOUT_MS / 1000:g} s; keyed elements: "
                 f"{sorted({k for c in keys for k in c.split() if k.startswith('st-key-')})}")
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=TIMEOUT_MS)
    elapsed = time.perf_counter() - t0
    not_found = page.get_by_role("dialog").filter(has_text="Page not found").count() > 0
    page.close()
    if own:
        context.close()
    return elapsed, (finished[0] - t0) if finished else float("nan"), not_found


def measure(browser, url: str, marker: str, warm_runs: int) -> tuple[float, float, bool, list, list]:
    """One page on a started server: cold (its first visit), then `warm_runs` new browser sessions, then
    `warm_runs` new tabs of a browser whose cache an earlier visit filled."""
    cold, cold_script, not_found = first_render(browser, url, marker)
    warm = [first_render(browser, url, marker)[:2] for _ in range(warm_runs)]
    cached = browser.new_context(viewport={"width": 1400, "height": 1200})
    first_render(browser, url, marker, cached)  # fills this browser's cache
    tabs = [first_render(browser, url, marker, cached)[0] for _ in range(warm_runs)]
    cached.close()
    return cold, cold_script, not_found, warm, tabs


def build_db(root: Path) -> str:
    """A profile database built by checkout `root`'s engine, outside every figure."""
    db = str(Path(tempfile.mkdtemp(prefix="kneepoint-bench-")) / "k.duckdb")
    subprocess.run([sys.executable, "-c", "from engine.store import Store; Store()"], cwd=root, check=True,
                   env=dict(os.environ, KNEEPOINT_DB=db))
    return db


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", help="comma-separated url paths (default: every page of app.py)")
    ap.add_argument("--warm-runs", type=int, default=3, help="warm visits per page (the median is shown)")
    ap.add_argument("--plain", action="store_true", help="start a plain `streamlit run app.py` instead of ui.serve")
    ap.add_argument("--root", type=Path, action="append",
                    help="a checkout whose app is served (default: this one); repeat it to compare checkouts")
    ap.add_argument("--no-floor", action="store_true", help="skip the floor rows (benchmarks/render_floor)")
    args = ap.parse_args()
    roots = [r.resolve() for r in (args.root or [ROOT])]
    use_root(roots[0])
    pages = args.pages.split(",") if args.pages is not None else app_pages()

    from playwright.sync_api import sync_playwright

    rows, floor = [], {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        for path, marker in ({} if args.no_floor else FLOOR_PAGES).items():  # a plain streamlit run, no database
            proc, url, ready = start_server("", serve=False, root=FLOOR)
            try:
                cold, cold_script, _, warm, tabs = measure(browser, f"{url}/{path}", marker, args.warm_runs)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            floor[path] = statistics.median(w[0] for w in warm)
            rows.append((f"floor: {'chart' if path else 'metric'}", ready, cold, cold_script, floor[path],
                         statistics.median(w[1] for w in warm), statistics.median(tabs), False, float("nan")))
            print(f"  floor /{path}: cold {cold:.2f} s, warm {', '.join(f'{w[0]:.2f}' for w in warm)} s",
                  file=sys.stderr)
        dbs = {root: build_db(root) for root in roots}
        for path in pages:  # each page on every root in turn, so a change of load hits both sides alike
            for root in roots:
                use_root(root)
                db = dbs[root]
                marker = MARKERS.get(path, FALLBACK)
                link = f"{path}?{QUERIES[path]()}" if path in QUERIES else path
                proc, url, ready = start_server(db, serve=not args.plain)
                try:
                    cold, cold_script, not_found, warm, tabs = measure(browser, f"{url}/{link}", marker,
                                                                       args.warm_runs)
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
                median = statistics.median(w[0] for w in warm)
                label = (path or "/ (default)") + (f" [{root.name}]" if len(roots) > 1 else "")
                rows.append((label, ready, cold, cold_script, median, statistics.median(w[1] for w in warm),
                             statistics.median(tabs), not_found, median - floor.get(floor_of(marker), float("nan"))))
                print(f"  /{path} [{root}]: cold {cold:.2f} s, warm {', '.join(f'{w[0]:.2f}' for w in warm)} s",
                      file=sys.stderr)
        browser.close()

    width = max(20, *(len(r[0]) for r in rows))
    print(f"{'page':{width}s} {'server ready':>12s} {'cold':>6s} {'(script)':>8s} {'warm':>6s} {'(script)':>8s} "
          f"{'over floor':>10s} {'new tab':>7s}  'Page not found'")
    for label, ready, cold, cold_script, warm, warm_script, tab, not_found, over in rows:
        print(f"{label:{width}s} {ready:12.2f} {cold:6.2f} {cold_script:8.2f} {warm:6.2f} {warm_script:8.2f} "
              f"{'' if over != over else f'{over:+.2f}':>10s} {tab:7.2f}  {'shown' if not_found else '-'}")
    print(f"seconds; goal: cold <= {COLD_GOAL_S:g} s (first visit right after a server start), warm <= {WARM_GOAL_S:g} s "
          f"(a new browser session on a started server; median of {args.warm_runs}). (script): when the server said "
          f"the page's script run finished, counted from navigation (the browser loads Streamlit's scripts and opens "
          f"the websocket first); the rest is the browser drawing the page. over floor: warm minus the floor page of "
          f"the same marker kind (floor rows: benchmarks/render_floor, a bare Streamlit app). new tab: a new session "
          f"in a browser that has visited before (Streamlit's scripts cached), median of {args.warm_runs}.")
    ours = [r for r in rows if not r[0].startswith("floor:")]
    if ours:
        print(f"worst: cold {max(r[2] for r in ours):.2f} s, warm {max(r[4] for r in ours):.2f} s "
              f"({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
