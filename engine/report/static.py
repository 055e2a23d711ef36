"""Static images of a report with a headless Chromium: figures as PNG, the whole report as PDF.

Uses Chromium's own command line (--screenshot, --print-to-pdf) in a subprocess with a timeout, a
throw-away profile and no network (every page is self-contained). All figures are laid out on one
page at fixed sizes and shot once, then cut apart with Pillow, so n figures cost one browser start.
Where no Chromium is found, or it fails, StaticUnavailable says why; callers skip the images and say so.
"""

from __future__ import annotations

import io
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Optional

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs
from engine.errors import KneepointError

CHROMIUM = "/usr/bin/chromium"  # Debian's package; CI installs it
ENV_CHROMIUM = "KNEEPOINT_CHROMIUM"
WIDTH = 900  # px, CSS; figures keep their own layout height
SCALE = 2  # device pixels per CSS pixel: crisp PNGs for slides
_MAX_PAGE_PX = 12_000  # figures per screenshot are limited so the page stays well inside Chromium's limits


class StaticUnavailable(KneepointError, RuntimeError):
    """Static images cannot be made here; the message says why."""


def find_chromium(path: Optional[str] = None, env: Optional[dict] = None) -> str:
    """The Chromium to use: `path`, else $KNEEPOINT_CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH."""
    env = os.environ if env is None else env
    wanted = path or env.get(ENV_CHROMIUM)
    if wanted:
        if Path(wanted).is_file() and os.access(wanted, os.X_OK):
            return str(wanted)
        raise StaticUnavailable(f"no Chromium at {wanted} (set by {'the caller' if path else ENV_CHROMIUM})")
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    raise StaticUnavailable(f"no Chromium found ({CHROMIUM} is missing; on Debian: apt-get install chromium)")


def _run(chromium: str, args: list[str], workdir: Path, timeout: float) -> None:
    cmd = [chromium, "--headless", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
           "--disable-extensions", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", "--mute-audio", "--hide-scrollbars", "--host-resolver-rules=MAP * ~NOTFOUND",
           f"--user-data-dir={workdir / 'profile'}", "--virtual-time-budget=15000", *args]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.insert(2, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    # own process group, so a hung browser and its helpers can be stopped together
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir,
                            start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise StaticUnavailable(f"Chromium did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        last = [line for line in err.decode(errors="replace").splitlines() if line.strip()][-1:] or ["no output"]
        raise StaticUnavailable(f"Chromium failed (exit {proc.returncode}): {last[0][:300]}")


def _figure_page(figs: list[tuple[str, go.Figure]]) -> tuple[str, list[tuple[str, int, int]]]:
    """An HTML page with the figures stacked at fixed sizes, and each one's (id, top, height) in CSS px."""
    boxes, divs, top = [], [], 0
    for fid, fig in figs:
        height = int(fig.layout.height or 450)
        boxes.append((fid, top, height))
        fixed = go.Figure(fig).update_layout(width=WIDTH, height=height, paper_bgcolor="white")
        divs.append(f'<div style="position:absolute;left:0;top:{top}px;width:{WIDTH}px;height:{height}px">'
                    + fixed.to_html(full_html=False, include_plotlyjs=False, div_id=f"f{len(divs)}",
                                    config={"staticPlot": True, "responsive": False}) + "</div>")
        top += height
    page = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html,body{margin:0;background:#fff}</style>"
            f"<script>{get_plotlyjs()}</script></head><body>{''.join(divs)}</body></html>")
    return page, boxes


def _chunks(figs: list[tuple[str, go.Figure]]) -> list[list[tuple[str, go.Figure]]]:
    out, cur, h = [], [], 0
    for item in figs:
        fh = int(item[1].layout.height or 450)
        if cur and h + fh > _MAX_PAGE_PX:
            out.append(cur)
            cur, h = [], 0
        cur.append(item)
        h += fh
    return out + ([cur] if cur else [])


def figure_pngs(figures: dict[str, go.Figure], chromium: Optional[str] = None, timeout: float = 90) -> dict[str, bytes]:
    """PNG bytes of each figure (same keys). Raises StaticUnavailable."""
    from PIL import Image

    exe = find_chromium(chromium)
    out: dict[str, bytes] = {}
    with tempfile.TemporaryDirectory(prefix="kneepoint-png-") as tmp:
        work = Path(tmp)
        for n, chunk in enumerate(_chunks(list(figures.items()))):
            page, boxes = _figure_page(chunk)
            (work / f"figs{n}.html").write_text(page, encoding="utf-8")
            shot = work / f"figs{n}.png"
            total = boxes[-1][1] + boxes[-1][2]
            _run(exe, [f"--screenshot={shot}", f"--window-size={WIDTH},{total}",
                       f"--force-device-scale-factor={SCALE}", (work / f"figs{n}.html").as_uri()], work, timeout)
            if not shot.exists():
                raise StaticUnavailable("Chromium ran but wrote no screenshot")
            with Image.open(shot) as img:
                for fid, top, height in boxes:
                    buf = io.BytesIO()
                    img.crop((0, top * SCALE, WIDTH * SCALE, (top + height) * SCALE)).save(buf, format="PNG")
                    out[fid] = buf.getvalue()
    return out


def html_to_pdf(html: str, chromium: Optional[str] = None, timeout: float = 120) -> bytes:
    """The HTML document printed to PDF (A4, backgrounds, no browser header/footer). Raises StaticUnavailable."""
    exe = find_chromium(chromium)
    with tempfile.TemporaryDirectory(prefix="kneepoint-pdf-") as tmp:
        work = Path(tmp)
        src, pdf = work / "report.html", work / "report.pdf"
        src.write_text(html, encoding="utf-8")
        _run(exe, [f"--print-to-pdf={pdf}", "--no-pdf-header-footer", "--run-all-compositor-stages-before-draw",
                   src.as_uri()], work, timeout)
        if not pdf.exists() or pdf.stat().st_size == 0:
            raise StaticUnavailable("Chromium ran but wrote no PDF")
        return pdf.read_bytes()
