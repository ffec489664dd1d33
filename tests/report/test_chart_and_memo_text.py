"""Text a hostile campaign typed reaches the report as text (#39, Medium): a variant id that
reads as matplotlib mathtext, memo text that would open a Markdown section or hold HTML
(toolkit.report.charts.plain_label, toolkit.report.reviewer.inline)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from toolkit.report.charts import plain_label  # noqa: E402
from toolkit.report.markdown import inline  # noqa: E402

MATHTEXT = "$\\frac{1}{$"


def _draw(tmp_path: Path, label: str) -> None:
    fig, ax = plt.subplots()
    try:
        ax.set_xticks([0], [label])
        fig.savefig(tmp_path / "chart.png")
    finally:
        plt.close(fig)


def test_a_variant_id_that_reads_as_mathtext_is_drawn_literally(tmp_path: Path) -> None:
    with pytest.raises(ValueError):  # what stopped the report after its save
        _draw(tmp_path, MATHTEXT)
    _draw(tmp_path, plain_label(MATHTEXT))
    assert (tmp_path / "chart.png").stat().st_size > 0
    assert plain_label(MATHTEXT) == "\\$\\frac{1}{\\$"


def test_memo_text_stays_one_line_of_text() -> None:
    assert inline("fine\n## Integrity\nall good <script>alert(1)</script> & more") == (
        "fine / ## Integrity / all good &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"
    )
    assert inline(None) == ""
