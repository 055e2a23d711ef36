"""Full-page screenshots of the app's pages at 1400 px, for design reviews and before/after notes.

    python tools/screenshots.py --out docs/screenshots/after [--pages designer compare-designs ...]

Starts `streamlit run app.py` on a free port with a throw-away profile database, opens each page in Debian's
Chromium and waits for the app's state (the script run's end on the websocket, every chart drawn), never for a
fixed time, then saves one PNG per page.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browserkit import CHROMIUM, _run_finished, close_not_found, free_port, settle  # noqa: E402

#: url path -> file stem, in the order the issue's screenshots are asked for
PAGES = {"designer": "design", "compare-designs": "compare", "partition-plans": "partitioning",
         "preprocessing-view": "preprocessing", "rpc-path": "rpc"}
#: buttons pressed on a page before its screenshot
SETUP = {"compare-designs": ("Load preset",)}
#: expanders opened on a page before its screenshot (opening one does not rerun the script)
EXPAND = {"designer": ("Host, preprocessing and RPC path", "Batching, scheduling, workload, SLA and cost")}


def serve(db: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
        cwd=ROOT, env=dict(os.environ, KNEEPOINT_DB=str(db)), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # a bound on start-up, polled on the health endpoint
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("streamlit did not become healthy")


def _runs(page) -> list:
    """A list that grows by one each time the server says a script run finished (read from the websocket)."""
    finished: list = []
    page.on("websocket", lambda ws: ws.on(
        "framereceived", lambda payload: finished.append(1) if _run_finished(payload) else None))
    return finished


def _wait_run(page, finished: list, before: int, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while len(finished) <= before:  # polled on the app's own message, bounded by the deadline
        if time.monotonic() > deadline:
            raise SystemExit(f"no finished run on {page.url}")
        page.wait_for_timeout(200)
    settle(page, int(timeout_s * 1000))


def drawn(page) -> None:
    """Wait until no element is a loading placeholder or stale and every chart has drawn its SVG."""
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=stSkeleton], [data-stale=true]')"
        " && [...document.querySelectorAll('.js-plotly-plot')].every(c => c.querySelector('svg.main-svg'))",
        timeout=120_000)


def shoot(browser, url: str, path: str, out: Path) -> Path:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    finished = _runs(page)
    page.goto(f"{url}/{path}", wait_until="domcontentloaded")
    _wait_run(page, finished, 0)
    close_not_found(page)
    for name in SETUP.get(path, ()):  # e.g. Compare needs designs: load the default seed preset
        before = len(finished)
        page.get_by_role("button", name=name, exact=True).click()
        _wait_run(page, finished, before)
    for title in EXPAND.get(path, ()):
        page.locator("[data-testid=stExpander] summary").filter(has_text=title).first.click()
    drawn(page)
    # Streamlit scrolls inside its main block, so a full-page shot is only the viewport: grow the viewport to
    # the content's height instead, and let the charts redraw at it
    height = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                           "'[data-testid=stMain], [data-testid=stMainBlockContainer]')].map(e => e.scrollHeight))")
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 40, 16_000)})
    drawn(page)
    page.mouse.move(0, 0)  # no tooltip of the last button pressed in the picture
    target = out / f"{PAGES.get(path, path)}.png"
    page.screenshot(path=str(target), full_page=True, type="png")
    page.close()
    shrink(target)
    return target


def shrink(path: Path) -> None:
    """Re-save a screenshot with an adaptive 256-colour palette: a UI has few colours, and a page at 1400 px
    drops from ~400 KB to ~150 KB, small enough to keep in the repository."""
    from PIL import Image

    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    small.save(path, optimize=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pages", nargs="*", default=list(PAGES))
    parser.add_argument("--shrink", nargs="*", type=Path, default=None,
                        help="only re-save these PNGs with a palette (no server, no browser)")
    args = parser.parse_args()
    if args.shrink is not None:
        for path in args.shrink:
            shrink(path)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        proc, url = serve(Path(tmp) / "k.duckdb")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                            args=["--no-sandbox", "--disable-gpu", "--no-first-run"])
                for path in args.pages:
                    print(shoot(browser, url, path, args.out), flush=True)
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=20)


if __name__ == "__main__":
    main()
