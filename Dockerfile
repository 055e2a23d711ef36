# Kneepoint: the Streamlit app and its embedded engine.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    KNEEPOINT_DB=/tmp/kneepoint/kneepoint.duckdb

WORKDIR /app
COPY requirements.txt .
RUN pip install -r requirements.txt

COPY app.py ./
COPY engine/ engine/
COPY pages/ pages/
COPY ui/ ui/
COPY data/seed/ data/seed/

# The app directory stays read-only for the app user; the database is built under /tmp.
RUN useradd --create-home --uid 10001 kneepoint
USER kneepoint

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).read() != b'ok')"
CMD ["streamlit", "run", "app.py", "--server.address=0.0.0.0", "--server.port=8501", "--server.headless=true"]
