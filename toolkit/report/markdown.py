"""Text from the workbook as Markdown that stays text: the one escaping function every
line of report.md passes workbook text (or a sentence quoting it) through.

A Protocol field holding ``![x](http://evil.example/x.png)`` would load a remote image when
report.md is rendered; an exclusion reason holding a line break and ``## Integrity`` would
open a section of its own; ``<script>`` would be HTML. Escaped, each renders as the
characters typed, on one line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: What Markdown reads as markup inside a line: code, emphasis, links and images (their
#: brackets), strikethrough, table cells, the escape itself; an underscore only where it
#: can open or close emphasis (``measured_s`` stays readable).
_MARKUP = re.compile(r"[\\`*\[\]~|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])")


def inline(value: Any) -> str:
    """``value`` as one line of Markdown text: its line breaks become `` / ``, HTML's
    ``&``, ``<`` and ``>`` entities, Markdown's markup characters escaped."""
    text = "" if value is None else str(value)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MARKUP.sub(lambda found: "\\" + found.group(0), text)
    return " / ".join(part.strip() for part in text.splitlines() if part.strip())


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table whose every cell is :func:`inline` text."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(inline(v) for v in row) + " |" for row in rows]
    return lines
