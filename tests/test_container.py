"""The Docker image, checked without a Docker engine.

The Dockerfile is read, not copied: its ENV, its COPY lines (filtered by .dockerignore), its pip RUN into a
fresh virtualenv from requirements.txt, its non-root user (a read-only application directory), its CMD and
its HEALTHCHECK are replayed on this machine, and a real browser loads two pages. Only the port is changed
(so parallel runs do not collide) and paths under /tmp are moved into the test's own directory.
The fresh install takes about a minute; it is the honest check that requirements.txt alone runs the app.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_hosting import make_readonly, make_writable, readonly_prefix

CHROMIUM = "/usr/bin/chromium"
PORT = 8501  # the port the image exposes


@dataclass
class Dockerfile:
    base: str = ""
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = ""
    copies: list[tuple[str, str]] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    user: str = ""
    expose: list[int] = field(default_factory=list)
    healthcheck: str = ""
    cmd: list[str] = field(default_factory=list)


def parse_dockerfile(text: str) -> Dockerfile:
    """The instructions this project's Dockerfile uses (one source per COPY, exec-form CMD)."""
    out = Dockerfile()
    logical, buf = [], ""
    for line in text.splitlines():
        if not buf and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        buf += line.rstrip()[:-1] + " " if line.rstrip().endswith("\\") else line
        if not line.rstrip().endswith("\\"):
            logical.append(buf.strip())
            buf = ""
    for inst in logical:
        op, _, rest = inst.partition(" ")
        op, rest = op.upper(), rest.strip()
        if op == "FROM":
            out.base = rest
        elif op == "ENV":
            out.env.update(dict(kv.split("=", 1) for kv in shlex.split(rest)))
        elif op == "WORKDIR":
            out.workdir = rest
        elif op == "COPY":
            src, dst = rest.split()
            out.copies.append((src, dst))
        elif op == "RUN":
            out.runs.append(rest)
        elif op == "USER":
            out.user = rest
        elif op == "EXPOSE":
            out.expose += [int(p.split("/")[0]) for p in rest.split()]
        elif op == "HEALTHCHECK":
            out.healthcheck = rest.split(" CMD ", 1)[1].strip()
        elif op == "CMD":
            out.cmd = json.loads(rest)
    return out


DOCKER = parse_dockerfile((ROOT / "Dockerfile").read_text())
IGNORED = [p.strip() for p in (ROOT / ".dockerignore").read_text().splitlines() if p.strip() and not p.startswith("#")]


def _pattern(pattern: str) -> re.Pattern:
    """A .dockerignore pattern as a regex over paths from the context root: * and ? stay within one directory,
    ** spans any number of them (Go's filepath.Match plus Docker's **)."""
    out, i, pattern = "", 0, pattern.strip("/")
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        else:
            out, i = out + {"*": "[^/]*", "?": "[^/]"}.get(pattern[i], re.escape(pattern[i])), i + 1
    return re.compile(out + r"\Z")


IGNORE_RES = [_pattern(p) for p in IGNORED]


def _ignored(rel: str) -> bool:
    """True if the path, or a directory above it, matches a .dockerignore pattern (then Docker leaves it out)."""
    parts = rel.split("/")
    return any(rx.match("/".join(parts[:i])) for i in range(1, len(parts) + 1) for rx in IGNORE_RES)


def build_context_copy(dest: Path) -> None:
    """What the COPY lines put in the image's WORKDIR, with .dockerignore applied."""
    for src, dst in DOCKER.copies:
        target = dest / dst.rstrip("/") if dst not in (".", "./") else dest / Path(src).name
        source = ROOT / src.rstrip("/")
        files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
        for f in files:
            rel = f.relative_to(ROOT).as_posix()
            if _ignored(rel):
                continue
            out = target if source.is_file() else target / f.relative_to(source)
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, out)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------- what the image promises

def test_dockerfile_promises():
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", DOCKER.base), DOCKER.base
    assert f"{sys.version_info.major}.{sys.version_info.minor}" == "3.11"  # the tests run the image's Python
    assert any("apt-get install" in r and re.search(r"\bchromium\b", r) for r in DOCKER.runs)  # static export
    assert ("requirements.txt", ".") in DOCKER.copies
    assert any("pip install -r requirements.txt" in r for r in DOCKER.runs)
    assert any(re.search(r"python -m compileall .*\bengine\b", r) for r in DOCKER.runs)  # bytecode in the image
    assert DOCKER.user not in ("", "root", "0") and any("useradd" in r and DOCKER.user in r for r in DOCKER.runs)
    assert DOCKER.expose == [PORT]
    assert DOCKER.cmd[:3] == ["python", "-m", "ui.serve"]  # streamlit run app.py, warmed up before any visitor
    assert "--server.address=0.0.0.0" in DOCKER.cmd and f"--server.port={PORT}" in DOCKER.cmd
    assert f"127.0.0.1:{PORT}/_stcore/health" in DOCKER.healthcheck
    assert DOCKER.env["KNEEPOINT_HOSTED"] == "1" and DOCKER.env["KNEEPOINT_DB"].startswith("/tmp/")
    # every page the app lists is in the image, and nothing secret or built goes into the build context
    copied = [dst.rstrip("/") for _, dst in DOCKER.copies]
    for page in re.findall(r'st\.Page\("([^"]+)"', (ROOT / "app.py").read_text()):
        assert any(page == c or page.startswith(c + "/") for c in copied), page
    for path in (".streamlit/secrets.toml", ".venv/bin/python", ".git/HEAD", "data/kneepoint.duckdb",
                 "data/kneepoint-user/latency_points.parquet", "engine/__pycache__/x.pyc", "tests/test_store.py"):
        assert _ignored(path), path
    assert not _ignored("engine/store/overlay.py") and not _ignored(".streamlit/config.toml")


# --------------------------------------------------------------------------- the image, replayed

def _remap(value: str, tmp: Path) -> str:
    return str(tmp / value.removeprefix("/tmp/")) if value.startswith("/tmp/") else value


@pytest.mark.browser
def test_fresh_install_runs_the_container_command(tmp_path):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run should have installed Debian's chromium")
        pytest.skip(f"{CHROMIUM} not installed (apt-get install -y chromium)")
    app, venv, tmp, home = tmp_path / "app", tmp_path / "venv", tmp_path / "tmp", tmp_path / "home"
    for d in (app, tmp, home):
        d.mkdir()
    build_context_copy(app)
    # build: a fresh virtualenv, then the Dockerfile's own pip and compileall RUN lines with it first on PATH
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KNEEPOINT_", "STREAMLIT_", "VIRTUAL_ENV"))}
    env.update({k: _remap(v, tmp) for k, v in DOCKER.env.items()})
    env.update(PATH=f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}", HOME=str(home), TMPDIR=str(tmp))
    build_env = {k: v for k, v in env.items() if k != "PIP_NO_CACHE_DIR"}  # the image skips the cache for size
    for run in DOCKER.runs:
        if "pip install" in run or "compileall" in run:
            done = subprocess.run(["sh", "-c", run], cwd=app, env=build_env, capture_output=True, text=True,
                                  timeout=1500)
            assert done.returncode == 0, f"{run}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    # run: the CMD as a user who cannot write to the application directory
    port = _free_port()
    cmd = [a.replace(f"--server.port={PORT}", f"--server.port={port}") for a in DOCKER.cmd]
    health = DOCKER.healthcheck.replace(f":{PORT}/", f":{port}/")
    before = sorted(p.relative_to(app).as_posix() for p in app.rglob("*"))
    assert f"engine/__pycache__/__init__.{sys.implementation.cache_tag}.pyc" in before  # compiled at build
    make_readonly(app)
    log = (tmp_path / "server.log").open("w")
    server = subprocess.Popen([*readonly_prefix(), *cmd], cwd=app, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while subprocess.run(["sh", "-c", health], env=env, capture_output=True, timeout=30).returncode != 0:
            assert server.poll() is None, (tmp_path / "server.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no HEALTHCHECK pass: " + (tmp_path / "server.log").read_text()[-3000:]
            time.sleep(0.5)
        _pages_load(f"http://127.0.0.1:{port}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
        make_writable(app)
    # the database was built where the image says (under /tmp), and nothing was written into the app
    assert Path(_remap(DOCKER.env["KNEEPOINT_DB"], tmp)).exists()
    assert sorted(p.relative_to(app).as_posix() for p in app.rglob("*")) == before
    assert "Traceback" not in (tmp_path / "server.log").read_text()


def _pages_load(url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(url, wait_until="domcontentloaded")
            page.get_by_text("SLA-bounded throughput").first.wait_for(state="visible", timeout=120_000)
            page.locator(".js-plotly-plot").first.wait_for(state="visible", timeout=60_000)
            page.goto(f"{url}/profile-store", wait_until="domcontentloaded")
            page.get_by_text("Latency profiles").first.wait_for(state="visible", timeout=60_000)
            page.get_by_text("stay in this browser session").first.wait_for(state="visible", timeout=30_000)
            assert page.locator('[data-testid="stException"]').count() == 0
        finally:
            browser.close()
