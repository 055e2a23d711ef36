"""Serve the app: `python -m ui.serve [streamlit options]` runs `streamlit run app.py` with those options, then opens
one session on the root page, then one on every other page of app.py, before any visitor does (`make run` and the
Docker image start the app this way).

Why: Streamlit sends a process's first script run through its legacy pages/ router (a pages/ directory sits beside
app.py; only st.navigation, in app.py, turns that router off). On that run a deep link to one of app.py's URL paths
showed 'Page not found' over the page, and a link naming a page file (/report) ran that file without app.py, so
without the password gate (tests/test_browser_deeplink.py). The root is safe on that run: it runs app.py. The same
run builds the profile database, imports the engine and caches the profile book and the default design's
evaluation (process-wide caches), so the first visitor no longer waits for them. Then every other page runs once:
a page's first run in a process compiles its script, imports what only it uses and fills its process-wide caches
(Partitioning's default plans took 8 s, Papers runs the engine for every seed paper's results, Preprocessing,
Tenancy and Profiles 1.4-1.7 s each on a two-core machine), so a first visitor who follows a deep link right after a
start gets the page as fast as a later one (benchmarks/page_first_render.py, "cold"). A plain `streamlit run app.py`
still leaves every first run to the first visitor.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

# imported before the server starts, so the warm-up session opens the moment the server answers, ahead of visitors
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parents[1]
START_S = 120  # the server's health check must answer within this
RUN_S = 300  # and the warm-up run finish within this
WARMED = "Kneepoint: first run done before any visitor"


def app_url_paths(app: Path = ROOT / "app.py") -> list[str]:
    """The url_path of every page `app` lists in st.Page(...) calls, in its order; the default page as "" (Streamlit
    serves it at the root; a link to its url_path shows 'Page not found')."""
    pages = re.findall(r"st\.Page\(([^\n]*)\)", app.read_text())
    return ["" if "default=True" in args else re.search(r'url_path="([^"]+)"', args)[1] for args in pages]


def warm_pages(app: Path = ROOT / "app.py") -> list[str]:
    """The pages opened at start, in order: the root first (see above), then every other page of `app`."""
    paths = app_url_paths(app)
    return [""] + [p for p in paths if p]


def _option(args: list[str], name: str, default: str) -> str:
    """The value of a streamlit option given as `--name=value` or `--name value`."""
    for i, arg in enumerate(args):
        if arg.startswith(f"--{name}="):
            return arg.split("=", 1)[1]
        if arg == f"--{name}" and i + 1 < len(args):
            return args[i + 1]
    return default


def _local_url(args: list[str]) -> str:
    address = _option(args, "server.address", "127.0.0.1")
    host = "127.0.0.1" if address in ("", "0.0.0.0", "::") else address
    return f"http://{host}:{_option(args, 'server.port', '8501')}"


def _healthy(url: str, server: subprocess.Popen) -> bool:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return True
        except OSError:
            time.sleep(0.02)
    return False


def warm_up(url: str, page: str = "") -> float:
    """Open one Streamlit session on `page` (a url path; "" the root page) of the server at `url` and wait for its
    script run to finish; returns the seconds it took. OSError (and websockets' errors) if the server cannot be
    reached."""
    t0 = time.perf_counter()
    with connect(url.replace("http", "ws", 1) + "/_stcore/stream", subprotocols=["streamlit"], open_timeout=30,
                 max_size=None) as socket:
        message = BackMsg()
        message.rerun_script.page_name = page  # "": the root, app.py's default page
        socket.send(message.SerializeToString())
        deadline = time.monotonic() + RUN_S
        while time.monotonic() < deadline:
            frame = socket.recv(timeout=max(deadline - time.monotonic(), 0.1))
            if isinstance(frame, bytes) and ForwardMsg.FromString(frame).WhichOneof("type") == "script_finished":
                return time.perf_counter() - t0
    raise TimeoutError(f"the warm-up run did not finish in {RUN_S} s")


def main(args: list[str]) -> int:
    server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), *args], cwd=ROOT)
    for sig in (signal.SIGTERM, signal.SIGINT):  # stop the server with this process (docker stop, Ctrl-C)
        signal.signal(sig, lambda number, frame: server.send_signal(number))
    url = _local_url(args)
    if _healthy(url, server):
        try:
            seconds = [warm_up(url, page) for page in warm_pages()]  # one after the other: the root goes first
            print(f"{WARMED} ({' + '.join(f'{s:.1f}' for s in seconds)} s)", file=sys.stderr, flush=True)
        except Exception as e:  # noqa: BLE001 - the app serves without it; say why the first visitor waits
            print(f"Kneepoint: no warm-up run ({type(e).__name__}: {e}); the first visitor starts the app",
                  file=sys.stderr, flush=True)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
