"""ui.serve opens every page of app.py once at start, the root first (its first run takes Streamlit's legacy router,
see ui/serve.py); the list is read from app.py, so a page added there is warmed too."""

import re

from tests.conftest import ROOT
from ui.serve import app_url_paths, warm_pages


def test_every_page_warmed_root_first():
    text = (ROOT / "app.py").read_text()
    listed = re.findall(r'url_path="([^"]+)"', text)
    paths = app_url_paths()
    assert len(paths) == text.count("st.Page(") == len(listed)
    assert paths.count("") == 1  # the default page, at the root
    pages = warm_pages()
    assert pages[0] == "" and sorted(pages) == sorted(paths) and len(set(pages)) == len(pages)
    assert "seed-papers" in pages and "partition-plans" in pages
