"""Untrusted text is text: cell_text, and every text cell through render + read."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkit import layout
from toolkit.workbook import store
from toolkit.workbook.model import WorkbookData
from toolkit.workbook.render import render
from toolkit.workbook.text import (
    EXCEL_CELL_LIMIT,
    TRUNCATION_MARK,
    cell_text,
    ooxml_unescape,
    utf16_length,
)

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def test_formula_and_link_lookalikes_pass_unchanged() -> None:
    for text in ("=1+1", "+SUM(A1)", "-2", "@SUM(1)", "http://x.test", "=cmd|' /C calc'!A0"):
        assert cell_text(text) == text


def test_control_characters_and_non_characters_are_removed() -> None:
    assert cell_text("a\x00b\x08c\x0bd\x1fe\ufffef\uffffg") == "abcdefg"


def test_tab_newline_and_carriage_return_are_kept() -> None:
    assert cell_text("a\tb\nc\r\nd") == "a\tb\nc\r\nd"


def test_a_lone_surrogate_becomes_the_replacement_character() -> None:
    assert cell_text("x\udcffy") == "x\ufffdy"


def test_a_surrogate_pair_given_as_two_code_points_is_joined() -> None:
    assert cell_text("\ud83d\ude00") == "\U0001f600"


def test_text_over_the_cell_limit_is_cut_and_says_so() -> None:
    text = cell_text("a" * 40_000)
    assert len(text) == EXCEL_CELL_LIMIT
    assert text.endswith(TRUNCATION_MARK)
    assert text[: EXCEL_CELL_LIMIT - len(TRUNCATION_MARK)] == "a" * (
        EXCEL_CELL_LIMIT - len(TRUNCATION_MARK)
    )


def test_text_at_the_limit_is_kept_whole() -> None:
    assert cell_text("a" * EXCEL_CELL_LIMIT) == "a" * EXCEL_CELL_LIMIT


def test_the_limit_counts_utf16_units_and_never_splits_an_emoji() -> None:
    """Excel counts an emoji as two characters: 20,000 emoji are over the limit."""
    text = cell_text("\U0001f600" * 20_000)
    assert utf16_length(text) <= EXCEL_CELL_LIMIT
    assert text.endswith(TRUNCATION_MARK)
    body = text[: -len(TRUNCATION_MARK)]
    assert set(body) == {"\U0001f600"} and utf16_length(body) == 32_706


def test_ooxml_unescape_decodes_left_to_right() -> None:
    assert ooxml_unescape("a_x000D_b") == "a\rb"
    assert ooxml_unescape("_x005F_x0041_") == "_x0041_"
    assert ooxml_unescape("x005F_ stays") == "x005F_ stays"


# ---------------------------------------------------------------- property: render + read

FORMULA_PREFIXES = (
    "=",
    "+",
    "-",
    "@",
    " =",
    "\t=",
    "http://",
    "https://",
    "mailto:",
    "ftp://",
    "www.",
    "external:",
    "internal:",
    "{=",
    "'=",
)
SPECIALS = (
    "_x0041_",
    "_x005F_",
    "x005F_",
    "_x000D_",
    "a\rb",
    "\r\n",
    "\x00",
    "\ufffe",
    "NA",
    "None",
    "TRUE",
    "1E5",
    "0012",
    "1,5",
    "2026-12-07",
    "#DIV/0!",
    "#N/A",
    "<b>x</b>",
    "&amp;",
    "]]>",
    "\u2028",
    "\x85",
    " ",
    "",
)

nasty = st.one_of(
    st.text(max_size=60),
    st.tuples(st.sampled_from(FORMULA_PREFIXES), st.text(max_size=30)).map("".join),
    st.sampled_from(SPECIALS),
    st.text(alphabet=st.characters(max_codepoint=0x20), max_size=10),
    st.text(alphabet=st.characters(categories=["Cs", "Co", "Cn"]), max_size=5),
    st.builds(
        lambda ch, n: ch * n,
        st.sampled_from(["a", "\U0001f600", "=", "\x00"]),
        st.integers(16_000, 40_000),
    ),
)


def _expected(text: str) -> str | None:
    """What a read gives back: the safe text, or blank for whitespace only."""
    safe = cell_text(text)
    return safe if safe.strip() else None


def _fill(strings: list[str]) -> WorkbookData:
    """A workbook whose every form field and every table cell holds one of ``strings``."""
    data = WorkbookData.empty()
    k = 0
    for sheet in layout.SHEETS:
        if sheet.kind == "form":
            for name in sheet.names:
                data.forms[sheet.name][name] = strings[k % len(strings)]
                k += 1
        elif sheet.kind == "table":
            row = {}
            for name in sheet.names:
                row[name] = strings[k % len(strings)]
                k += 1
            data.append(sheet.name, row)
    return data


_CELL = re.compile(r"<c ([^>]*?)(/>|>(.*?)</c>)", re.S)


def _assert_every_cell_is_a_string(path: Path) -> None:
    """No formula, no link, no number: every written cell is a shared string (t="s"). The
    Overview sheet is left out: it holds only the toolkit's own formulas into the sheets
    checked here, never a typed text."""
    book = openpyxl.load_workbook(path, read_only=True)
    overview = f"xl/worksheets/sheet{book.sheetnames.index('Overview') + 1}.xml"
    book.close()
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
        for name in archive.namelist():
            if name.startswith("xl/worksheets/_rels/"):
                assert b"hyperlink" not in archive.read(name), name
            if not re.fullmatch(r"xl/worksheets/sheet\d+\.xml", name) or name == overview:
                continue
            xml = archive.read(name).decode("utf-8")
            assert "<f>" not in xml and "<f " not in xml, name
            assert "<hyperlink" not in xml, name
            for attributes, _, body in _CELL.findall(xml):
                if body:
                    assert 't="s"' in attributes, (name, attributes, body[:80])


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(strings=st.lists(nasty, min_size=1, max_size=8))
def test_no_text_becomes_a_formula_or_link_and_all_reads_back(
    tmp_path: Path, strings: list[str]
) -> None:
    path = tmp_path / "w.xlsx"
    path.unlink(missing_ok=True)
    data = _fill(strings)
    render(data, path)

    _assert_every_cell_is_a_string(path)
    book = openpyxl.load_workbook(path)
    for ws in book.worksheets:
        if ws.title == "Overview":  # the toolkit's own formulas (see the helper above)
            continue
        for row in ws.iter_rows():
            for cell in row:
                if cell.value is not None:
                    assert cell.data_type == "s", (ws.title, cell.coordinate, cell.value)
                    assert cell.hyperlink is None
    book.close()

    back = store.read(path)
    for sheet in layout.SHEETS:
        if sheet.kind == "form":
            written = data.forms[sheet.name]
            assert back.forms[sheet.name] == {k: _expected(v) for k, v in written.items()}
        elif sheet.kind == "table":
            expected = {k: _expected(v) for k, v in data.tables[sheet.name][0].items()}
            rows = [expected] if any(v is not None for v in expected.values()) else []
            assert back.tables[sheet.name] == rows
