"""Where a page's first render goes in the browser: one visit per page by a new browser session (empty cache) to a
started server (`python -m ui.serve`), traced with Chromium's own timeline (Playwright + CDP tracing).

Printed per page, in milliseconds from navigation start: the HTML and the main script arriving; the websocket
opening; the server's first element and its script_finished message; the page's render marker (the same MARKERS as
benchmarks/page_first_render.py) first in the DOM; the first Plotly chart drawn (its SVG); and Streamlit's running
indicator gone. Then where the renderer's main thread spent its time up to that point: per script (compile +
evaluate), script run by the page (Streamlit and Plotly function calls, by script file), style/layout/paint, and idle;
and the bytes of each static file and of the websocket messages (figure JSON travels in them).

    .venv/bin/python benchmarks/page_render_trace.py [--pages ,compare-designs] [--runs 2] [--save DIR] [--root DIR]
    (--root: trace another checkout's app, e.g. a worktree of main, in the same conditions)
    (--save: also write each visit's Chrome trace JSON, for chrome://tracing or Perfetto)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import page_first_render  # noqa: E402
from page_first_render import (CHROMIUM, FALLBACK, MARKERS, QUERIES, TIMEOUT_MS, app_pages,  # noqa: E402
                               start_server)

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "v8.execute", "blink.user_timing",
              "loading", "toplevel"]

# records, in the page's own clock (performance.now(), ms from navigation start), when the marker, the first chart's
# plot and its SVG first exist, and every websocket message's arrival and size
PROBE = """
(() => {
  const seen = {};
  window.__kp = {seen, ws: []};
  const Native = window.WebSocket;
  window.WebSocket = function (...args) {
    const socket = new Native(...args);
    seen.ws_created = seen.ws_created ?? performance.now();
    socket.addEventListener('open', () => { seen.ws_open = performance.now(); });
    socket.addEventListener('message', (e) => {
      const size = e.data.byteLength ?? e.data.size ?? e.data.length;
      window.__kp.ws.push([performance.now(), size]);
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
  const check = () => {
    const now = performance.now();
    const marker = window.__kp_marker && document.querySelector(window.__kp_marker);
    if (marker && seen.marker === undefined) seen.marker = now;
    if (seen.first_element === undefined && document.querySelector('[data-testid=stMainBlockContainer] .element-container'))
      seen.first_element = now;
    if (seen.plot === undefined && document.querySelector('[data-testid=stPlotlyChart]')) seen.plot = now;
    if (seen.svg === undefined && document.querySelector('[data-testid=stPlotlyChart] .main-svg')) seen.svg = now;
  };
  new MutationObserver(check).observe(document, {subtree: true, childList: true, attributes: true});
})();
"""


def _ws_types(frames: list) -> list:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    out = []
    for t, payload in frames:
        try:
            out.append((t, ForwardMsg.FromString(payload).WhichOneof("type"), len(payload)))
        except Exception:  # noqa: BLE001 - not one ForwardMsg
            out.append((t, "?", len(payload)))
    return out


def main_thread_split(trace: dict, until_ms: float) -> tuple[dict, dict, float]:
    """From a Chrome trace: the renderer main thread's busy time (ms) by kind of work, and by script URL (compile and
    evaluate of each file, and the function calls it runs), up to `until_ms` after navigation start."""
    events = trace["traceEvents"]
    main = None
    for e in events:  # the renderer's main thread of the page
        if e.get("name") == "thread_name" and e["args"].get("name") == "CrRendererMain":
            pid_tid = (e["pid"], e["tid"])
            if any(x.get("name") == "navigationStart" and (x["pid"], x["tid"]) == pid_tid for x in events):
                main = pid_tid
    if main is None:
        return {}, {}, float("nan")
    nav = min(e["ts"] for e in events if e.get("name") == "navigationStart" and (e["pid"], e["tid"]) == main)
    end = nav + until_ms * 1e3
    by_kind, by_url = collections.Counter(), collections.Counter()
    tasks = 0.0
    for e in events:
        if (e.get("pid"), e.get("tid")) != main or e.get("ph") != "X" or e["ts"] < nav or e["ts"] > end:
            continue
        dur = e.get("dur", 0) / 1e3
        name = e["name"]
        data = e.get("args", {}).get("data", {}) or {}
        if name in ("RunTask", "ThreadControllerImpl::RunTask"):
            tasks += dur
        elif name in ("EvaluateScript", "v8.compile", "v8.compileModule", "v8.evaluateModule", "CompileScript"):
            url = (data.get("url") or e.get("args", {}).get("fileName") or "?").rsplit("/", 1)[-1]
            by_url[f"{url} ({'compile' if 'ompile' in name else 'evaluate'})"] += dur
            by_kind["script compile+evaluate"] += dur
        elif name == "FunctionCall":
            url = (data.get("url") or "?").rsplit("/", 1)[-1]
            by_url[f"{url} (calls)"] += dur
            by_kind["script calls"] += dur
        elif name in ("UpdateLayoutTree", "Layout", "RecalculateStyles", "ParseAuthorStyleSheet"):
            by_kind["style+layout"] += dur
        elif name in ("Paint", "PrePaint", "Layerize", "UpdateLayer", "CompositeLayers", "Commit"):
            by_kind["paint"] += dur
        elif name in ("ParseHTML",):
            by_kind["parse HTML"] += dur
        elif name in ("MajorGC", "MinorGC", "V8.GCScavenger", "V8.GCFinalizeMC", "BlinkGC.AtomicPhase"):
            by_kind["GC"] += dur
    return by_kind, by_url, tasks


def visit(browser, url: str, marker: str, save: Path | None, tag: str) -> dict:
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    page = context.new_page()
    page.add_init_script(PROBE + f"\nwindow.__kp_marker = {json.dumps(marker)};")
    frames = []
    t_goto = [0.0]
    page.on("websocket", lambda ws: ws.on("framereceived", lambda p: frames.append((time.perf_counter() - t_goto[0], p))
                                          if not isinstance(p, str) else None))
    browser.start_tracing(page=page, categories=CATEGORIES)
    t_goto[0] = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.locator(marker).first.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.wait_for_function("() => !document.querySelector('[data-testid=stStatusWidget]')", timeout=TIMEOUT_MS)
    done_ms = page.evaluate("performance.now()")
    time.sleep(0.3)  # let the last paint land in the trace
    trace = json.loads(browser.stop_tracing())
    if save:
        (save / f"{tag}.json").write_text(json.dumps(trace))
    seen = page.evaluate("window.__kp.seen")
    ws = page.evaluate("window.__kp.ws")
    resources = page.evaluate("""performance.getEntriesByType('resource').concat(performance.getEntriesByType('navigation'))
        .map(r => ({name: r.name.split('?')[0].split('/').pop() || '(html)', start: r.startTime, end: r.responseEnd,
                    bytes: r.encodedBodySize, decoded: r.decodedBodySize}))""")
    paints = {p["name"]: p["startTime"] for p in page.evaluate("performance.getEntriesByType('paint').map(p => ({name: p.name, startTime: p.startTime}))")}
    context.close()
    # the python clock's frames -> the page's clock: align the first frame (python) with the first message (page)
    typed = _ws_types(frames)
    offset = (ws[0][0] - typed[0][0] * 1e3) if ws and typed else 0.0
    finished = next((t * 1e3 + offset for t, kind, _ in typed if kind == "script_finished"), float("nan"))
    first_delta = next((t * 1e3 + offset for t, kind, _ in typed if kind == "delta"), float("nan"))
    by_kind, by_url, busy = main_thread_split(trace, done_ms)
    return dict(seen=seen, done=done_ms, finished=finished, first_delta=first_delta, resources=resources,
                paints=paints, ws_bytes=sum(s for _, s in ws), ws_count=len(ws), by_kind=by_kind, by_url=by_url,
                busy=busy, biggest_ws=max((s for _, s in ws), default=0))


def report(path: str, visits: list[dict]) -> None:
    med = lambda f: statistics.median(f(v) for v in visits)  # noqa: E731
    v0 = visits[0]
    html = next((r for r in v0["resources"] if r["name"] in ("(html)", path or "(html)")), None)
    main_js = max((r for r in v0["resources"] if r["name"].startswith("index.") and r["name"].endswith(".js")),
                  key=lambda r: r["bytes"], default=None)
    plotly = next((r for r in v0["resources"] if r["name"].startswith("PlotlyChart")), None)
    print(f"\n/{path}  (median of {len(visits)} visits; ms from navigation start)")
    rows = [("HTML received", lambda v: next((r["end"] for r in v["resources"] if r["name"] == "(html)"), float("nan"))),
            ("main script received", lambda v: max((r["end"] for r in v["resources"] if r["name"].startswith("index.")),
                                                   default=float("nan"))),
            ("first paint", lambda v: v["paints"].get("first-paint", float("nan"))),
            ("websocket open", lambda v: v["seen"].get("ws_open", float("nan"))),
            ("server: first element sent", lambda v: v["first_delta"]),
            ("first element in the DOM", lambda v: v["seen"].get("first_element", float("nan"))),
            ("Plotly script received", lambda v: next((r["end"] for r in v["resources"]
                                                      if r["name"].startswith("PlotlyChart")), float("nan"))),
            ("server: script_finished", lambda v: v["finished"]),
            ("render marker in the DOM", lambda v: v["seen"].get("marker", float("nan"))),
            ("first chart's SVG drawn", lambda v: v["seen"].get("svg", float("nan"))),
            ("done (marker, not running)", lambda v: v["done"])]
    for label, f in rows:
        print(f"  {label:30s} {med(f):8.0f}")
    print(f"  renderer main thread busy until done: {med(lambda v: v['busy']):.0f} ms of {med(lambda v: v['done']):.0f}")
    kinds = collections.Counter()
    urls = collections.Counter()
    for v in visits:
        kinds.update(v["by_kind"])
        urls.update(v["by_url"])
    for kind, ms in kinds.most_common():
        print(f"    {kind:40s} {ms / len(visits):8.0f}")
    print("  top scripts (compile / evaluate / calls):")
    for url, ms in urls.most_common(8):
        print(f"    {url:60s} {ms / len(visits):8.0f}")
    sizes = sorted(v0["resources"], key=lambda r: -r["bytes"])[:6]
    print("  largest downloads (bytes on the wire / decoded): "
          + "; ".join(f"{r['name']} {r['bytes'] / 1e6:.2f}/{r['decoded'] / 1e6:.2f} MB" for r in sizes))
    print(f"  websocket: {v0['ws_count']} messages, {v0['ws_bytes'] / 1e3:.0f} kB (largest {v0['biggest_ws'] / 1e3:.0f} kB)")
    _ = (html, main_js, plotly)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", help="comma-separated url paths (default: every page of app.py)")
    ap.add_argument("--runs", type=int, default=2, help="visits per page, each a new browser session")
    ap.add_argument("--save", type=Path, help="a folder for the Chrome traces")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout whose app is served (default: this one)")
    args = ap.parse_args()
    page_first_render.use_root(args.root)
    pages = args.pages.split(",") if args.pages is not None else app_pages()
    if args.save:
        args.save.mkdir(parents=True, exist_ok=True)

    from playwright.sync_api import sync_playwright

    db = str(Path(tempfile.mkdtemp(prefix="kneepoint-trace-")) / "k.duckdb")
    subprocess.run([sys.executable, "-c", "from engine.store import Store; Store()"], cwd=args.root, check=True,
                   env=dict(os.environ, KNEEPOINT_DB=db))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"])
        proc, url, _ = start_server(db, serve=True)
        try:
            for path in pages:
                marker = MARKERS.get(path, FALLBACK)
                link = f"{path}?{QUERIES[path]()}" if path in QUERIES else path
                visit(browser, f"{url}/{link}", marker, None, "warmup")  # the page's first run on this server
                visits = [visit(browser, f"{url}/{link}", marker, args.save, f"{path or 'root'}-{i}")
                          for i in range(args.runs)]
                report(path, visits)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        browser.close()
    print(f"\n({os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
