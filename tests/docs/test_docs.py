"""The documentation: a short README, no requirement codes where a user reads, a reference
generated from the code (a changed option or column changes its page), a site that builds."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import click
import pytest

from tests.support.builders import docs_script
from tests.support.paths import DOCS, ROOT, SAMPLES
from toolkit import layout
from toolkit.cli import cli

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

README = ROOT / "README.md"
#: The one page allowed to use requirement codes in its prose.
APPENDIX = DOCS / "traceability.md"
CODE = re.compile(r"\b(?:R\d{1,2}|B[1-5])\b")


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    """docs/gen_reference.py, the MkDocs hook that writes the generated reference."""
    return docs_script("gen_reference")


def _prose(text: str) -> str:
    """``text`` without its code (blocks and spans): the tool's own output, quoted as printed."""
    return re.sub(r"`[^`]*`", "", re.sub(r"^```.*?^```", "", text, flags=re.S | re.M))


# ------------------------------------------------------------------ the README


def test_the_readme_is_at_most_220_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 220


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    first_block = lines.index("```")
    assert lines[0].startswith("# ") and all(not line for line in lines[1:first_block])
    assert [line.split("#")[0].strip() for line in lines[first_block + 1 : first_block + 3]] == [
        "make demo",
        "make test",
    ]


def test_every_link_of_the_readme_reaches_a_file() -> None:
    links = re.findall(r"\]\(([^)#\s]+)", README.read_text(encoding="utf-8"))
    assert len(links) > 10 and "docs/img/summary.png" in links
    missing = [link for link in links if "://" not in link and not (ROOT / link).is_file()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_readme_holds_no_requirement_code_even_in_its_examples() -> None:
    found = CODE.findall(README.read_text(encoding="utf-8"))
    assert not found, f"README.md cites {sorted(set(found))}: say the rule in words"


def test_no_page_but_the_appendix_cites_requirement_codes_in_its_text() -> None:
    cited = {}
    for page in sorted(DOCS.rglob("*.md")):
        found = CODE.findall(_prose(page.read_text(encoding="utf-8")))
        if found and page != APPENDIX:
            cited[str(page.relative_to(ROOT))] = sorted(set(found))
    assert not cited, f"say the rule in words, or cite it in docs/traceability.md: {cited}"


def test_the_code_grep_finds_a_code_in_prose_and_leaves_quoted_output() -> None:
    text = "A rule (R14) here.\n```\nerror: ... (R2)\n```\nA B200 lot, batch b1, `x (R4)`.\n"
    assert CODE.findall(_prose(text)) == ["R14"]


# ------------------------------------------------------------------ generated reference


def test_the_generated_reference_holds_no_requirement_code(gen: ModuleType) -> None:
    text = gen.workbook_markdown() + gen.protocol_examples()
    assert not CODE.findall(text)
    assert "`corpus_accepted`" in text and "## Settlement" in text


def test_plain_takes_the_codes_out_of_a_sentence(gen: ModuleType) -> None:
    assert gen.plain("Full runs per variant (R11).") == "Full runs per variant."
    assert gen.plain("Raw table (R12): one row") == "Raw table: one row"
    assert gen.plain("(never lowered afterwards, R16)") == "(never lowered afterwards)"
    assert gen.plain("(R12: no GPU is not 0 s)") == "(no GPU is not 0 s)"
    assert gen.plain("A B200 lot holds two cards.") == "A B200 lot holds two cards."
    with pytest.raises(ValueError, match="word the rule"):
        gen.plain("as R14 says")


def test_a_column_added_to_the_layout_appears_in_the_workbook_reference(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = gen.render("<!-- generated: workbook -->")
    extra = layout.Column(
        "probe_temperature_c",
        layout.NUMBER,
        "GPU temperature at the window's end (R10).",
        measurement=True,
        computed=True,
        since=5,
    )
    attempts = dataclasses.replace(layout.ATTEMPTS, columns=(*layout.ATTEMPTS.columns, extra))
    sheets = tuple(attempts if s.name == "Attempts" else s for s in layout.SHEETS)
    monkeypatch.setattr(layout, "SHEETS", sheets)
    monkeypatch.setitem(layout.SHEET_BY_NAME, "Attempts", attempts)
    after = gen.render("<!-- generated: workbook -->")
    row = "| `probe_temperature_c` | number | iteralab | 5 | GPU temperature at the window's end. |"
    assert row not in before and row in after
    assert (
        "| `probe_temperature_c_reason` | text | iteralab | 5 | Why probe_temperature_c "
        "is empty. |" in after
    )
    assert row in gen.render("<!-- generated: sheet Attempts -->")


def test_an_error_kind_added_to_the_tree_appears_with_its_exit_code(gen: ModuleType) -> None:
    from toolkit import errors

    assert "QuotaError" not in gen.error_kinds()

    class QuotaError(errors.UsageError):
        """The provider refused the rental: over the account's quota."""

        __module__ = errors.__name__

    assert (
        "| &nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;&nbsp;`QuotaError` | 2 | The provider "
        "refused the rental: over the account's quota. |"
    ) in gen.error_kinds()
    del QuotaError


def test_an_unknown_marker_stops_the_build(gen: ModuleType) -> None:
    with pytest.raises(ValueError, match="unknown generated marker"):
        gen.render("<!-- generated: sheet Nowhere -->")


def _cli_page_html(gen: ModuleType) -> str:
    """docs/reference/cli.md as the site builds it: mkdocs-click, then the hook."""
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("mkdocs_click")
    html = markdown.markdown(
        (DOCS / "reference" / "cli.md").read_text(encoding="utf-8"),
        extensions=["mkdocs-click", "attr_list", "toc"],
    )
    page = SimpleNamespace(file=SimpleNamespace(src_uri=gen.CLI_PAGE))
    return str(gen.on_page_content(html, page=page))


def test_an_option_added_to_a_command_appears_in_the_cli_reference(
    gen: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _cli_page_html(gen)
    report = cli.commands["report"]
    option = click.Option(["--probe-margin"], type=float, help="A margin for the probe (R15).")
    monkeypatch.setattr(report, "params", [*report.params, option])

    @click.command(help="Print the probe's state.")
    def probe() -> None:
        """Unused: the reference reads the command, never runs it."""

    monkeypatch.setitem(cli.commands, "probe", probe)
    after = _cli_page_html(gen)
    assert "--probe-margin" not in before and "--probe-margin" in after
    assert "A margin for the probe." in after
    assert "iteralab probe" not in before and "iteralab probe" in after
    assert not CODE.findall(after)


# ------------------------------------------------------------------ the site


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            "NO_MKDOCS_2_WARNING": "1",
            "PATH": str(Path(sys.executable).parent),
            "PYTHONPATH": str(ROOT),
            "HF_HUB_OFFLINE": "1",
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr
    workbook = (tmp_path / "site" / "reference" / "workbook.html").read_text(encoding="utf-8")
    assert "corpus_accepted" in workbook
    assert "iteralab ledger import" in (tmp_path / "site" / "reference" / "cli.html").read_text(
        encoding="utf-8"
    )


def _screenshots(*args: str) -> subprocess.CompletedProcess[str]:
    """``python docs/screenshots.py ARGS``."""
    return subprocess.run(
        [sys.executable, str(DOCS / "screenshots.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _needs_printing() -> None:
    if not all(shutil.which(tool) for tool in ("soffice", "pdftoppm", "pdftotext")):
        if os.environ.get("ITERALAB_REQUIRE_LIBREOFFICE") == "1":
            pytest.fail("LibreOffice and poppler-utils are required here: make system-packages")
        pytest.skip("LibreOffice (soffice) or poppler-utils (pdftoppm, pdftotext) is not installed")


@pytest.mark.libreoffice
def test_the_screenshots_are_printed_from_a_workbook(tmp_path: Path) -> None:
    _needs_printing()
    sample = str(SAMPLES / "example_campaign.xlsx")
    done = _screenshots("--workbook", sample, "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr
    names = ("overview", "summary", "settlement", "decision")
    assert done.stdout.splitlines() == [f"wrote {tmp_path / name}.png" for name in names]
    pngs = {name: (tmp_path / f"{name}.png").read_bytes() for name in names}
    for name, png in pngs.items():
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5_000, name
    assert len(set(pngs.values())) == 4  # four sheets, four pages


@pytest.mark.libreoffice
def test_the_screenshots_picture_only_the_sheets_asked_for(tmp_path: Path) -> None:
    _needs_printing()
    sample = str(SAMPLES / "example_campaign.xlsx")
    done = _screenshots("--workbook", sample, "--out", str(tmp_path), "--sheets", "Decision")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["decision.png"]


def test_the_screenshots_refuse_a_sheet_the_workbook_lacks(tmp_path: Path) -> None:
    done = _screenshots("--out", str(tmp_path), "--sheets", "Overview,Sumary")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "screenshots.py: error: argument --sheets: the workbook has no sheet 'Sumary': "
        f"choose among {', '.join(sheet.name for sheet in layout.SHEETS)}"
    )
    assert list(tmp_path.iterdir()) == []
