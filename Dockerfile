# Kneepoint as a hosted team demo (README, "Hosting"). Visitors never see a traceback
# (STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none; app.py sets the same whenever KNEEPOINT_HOSTED is on).
#   docker build -t kneepoint .
#   docker run --rm -p 8501:8501 [-e KNEEPOINT_PASSWORD=...] kneepoint      -> http://localhost:8501
# tests/test_container.py rebuilds this environment without Docker (a fresh virtualenv from requirements.txt,
# the files below in a read-only directory, this CMD and this HEALTHCHECK), so keep the instructions simple.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=none \
    KNEEPOINT_HOSTED=1 \
    KNEEPOINT_DB=/tmp/kneepoint/kneepoint.duckdb

# Chromium renders the Report page's PNG and PDF exports (engine/report/static.py runs /usr/bin/chromium),
# with fonts so their text is not blank boxes. Its sandbox needs user namespaces that a container's non-root
# user does not get; Debian's launcher sources /etc/chromium.d/, so switch the sandbox off there. The pages it
# renders are the app's own reports, loaded from disk with networking disabled.
RUN apt-get update \
 && apt-get install -y --no-install-recommends chromium fonts-dejavu-core \
 && rm -rf /var/lib/apt/lists/* \
 && echo 'export CHROMIUM_FLAGS="$CHROMIUM_FLAGS --no-sandbox"' > /etc/chromium.d/zz-container-no-sandbox

# The same pinned requirements as `make run`.
WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

RUN useradd --create-home --uid 10001 kneepoint

COPY .streamlit/config.toml .streamlit/config.toml
COPY app.py ./
COPY engine/ engine/
COPY pages/ pages/
COPY ui/ ui/
COPY data/seed/ data/seed/

# Bytecode compiled once, here: the app's user cannot write the app directory (and PYTHONDONTWRITEBYTECODE is set),
# so without it every process, the server and each `python -m engine` command, compiles the code from source again
# (~0.1 s of a warm `evaluate`: 0.36 s against 0.27 s here).
RUN python -m compileall -q app.py engine pages ui

# The files above belong to root, so the app directory is read-only for the app's user: the database is
# built under /tmp (KNEEPOINT_DB) and each visitor's imports stay in their own session (KNEEPOINT_HOSTED).
USER kneepoint

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"
# 0.0.0.0: reachable through the published port; no file watcher: the code in an image never changes.
# ui.serve runs `streamlit run app.py` and opens one session on the root before any visitor (see ui/serve.py).
CMD ["python", "-m", "ui.serve", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true", "--server.fileWatcherType=none"]
