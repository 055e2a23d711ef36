"""User-controlled text (scenario names, notes, error messages that echo a value) shown as text, never as Markdown.

st.markdown, st.caption, st.error, st.toast and widget labels render Markdown: a design name such as
`![x](http://host/a.png)` from a crafted link would make every visitor's browser fetch that image. md() escapes
what Markdown, Streamlit's directives (`:red[...]`) and HTML give meaning to, so the text reads as typed, while
ordinary prose (field paths like workload.query_size, numbers, dashes) keeps its source unchanged.
"""

from __future__ import annotations

import re

# CommonMark lets a backslash escape any ASCII punctuation. These start syntax anywhere in a line: links and
# images ([ ]), HTML and autolinks (< >), code, emphasis, strike-through, tables, maths, entities.
_ANYWHERE = re.compile(r"([\\`*\[\]<>~|$&])")
# Underscores emphasise only at a word's edge: snake_case field names stay as they are.
_EDGE_UNDERSCORE = re.compile(r"(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")
# At the start of a line these make a heading, a list, a quote or a rule.
_LINE_START = re.compile(r"^(\s*)([#+\-=]|\d+[.)])")
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029]+")  # a new line could start a block of its own


def md(text) -> str:
    """`text` (any object, via str) escaped for a Markdown-rendering Streamlit element, on one line."""
    line = _LINE_BREAKS.sub(" ", str(text))
    line = _ANYWHERE.sub(r"\\\1", line)
    line = _EDGE_UNDERSCORE.sub(r"\\_", line)
    return _LINE_START.sub(lambda m: m.group(1) + "".join("\\" + ch if not ch.isdigit() else ch for ch in m.group(2)),
                           line)
