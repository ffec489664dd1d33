"""MkDocs hook: the reference pages that are generated from the code at build time.

A page asks for generated text with a marker on a line of its own:

- ``<!-- generated: workbook -->``: every sheet and column of ``toolkit/layout.py``;
- ``<!-- generated: sheet NAME -->``: one sheet's columns (or a form's fields);
- ``<!-- generated: protocol-examples -->``: every Protocol field with the value the shipped
  example campaign (``samples/example_campaign.xlsx``) gives it;
- ``<!-- generated: errors -->``: each kind of error of ``toolkit/errors.py`` and its exit code;
- ``<!-- generated: traceability -->``: which columns the requirement codes of the layout's
  help texts point at (the only generated text that keeps the codes).

The command-line reference comes from mkdocs-click (``::: mkdocs-click`` in the page). Nothing
here is copied by hand, so a column added to the layout appears on the next ``make docs``.
The help texts of the layout cite requirement codes for the maintainers; a reader of the
documentation gets the sentence without them (``plain``). A code that ``plain`` cannot take
out cleanly stops the build, naming the text, so that someone words it.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolkit import errors, layout

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_WORKBOOK = ROOT / "samples" / "example_campaign.xlsx"

_CODE = r"(?:R\d{1,2}|B[1-5])(?:-(?:R\d{1,2}|B[1-5]))?"
_CODES = rf"{_CODE}(?:,\s*{_CODE})*"
#: A requirement or beyond-the-seeds code, as the grep test looks for them.
CODE = re.compile(rf"\b{_CODE}\b")
_ONLY_CODES = re.compile(rf"\s*\({_CODES}\)")  # "(R1, R24)"
_LEADING = re.compile(rf"\({_CODES}(?::|,)\s*")  # "(R12: no GPU ..." -> "(no GPU ..."
_TRAILING = re.compile(rf",\s*{_CODES}(?=\))")  # "(never lowered, R16)" -> "(...)"
_MARKER = re.compile(r"^<!-- generated: (?P<what>[a-z-]+)(?: (?P<arg>\w+))? -->$", re.M)

KIND_WORDS = {
    layout.TEXT: "text",
    layout.INT: "whole number",
    layout.NUMBER: "number",
    layout.SECONDS: "seconds",
    layout.BYTES: "bytes",
    layout.USD: "USD",
    layout.RATIO: "ratio",
    layout.YESNO: "yes / no",
    layout.CHOICE: "one of",
    layout.DATETIME: "date-time with UTC offset",
    layout.USD_OR_UNDEFINED: "USD or 'undefined'",
    layout.MONEY: "amount in the row's currency",
}


def plain(text: str) -> str:
    """``text`` without its requirement codes; ValueError when one cannot be taken out."""
    out = _TRAILING.sub("", _LEADING.sub("(", _ONLY_CODES.sub("", text)))
    left = CODE.search(out)
    if left:
        raise ValueError(
            f"a requirement code that reads as part of a sentence: {text!r}: "
            "word the rule in toolkit/layout.py so that the code sits in "
            "parentheses, e.g. '... (R14)'"
        )
    return out


def _cell(text: str) -> str:
    """Text fit for one cell of a Markdown table."""
    return plain(text).replace("|", "\\|").replace("\n", " ")


def _kind(column: layout.Column) -> str:
    words = KIND_WORDS.get(column.kind, column.kind)
    if column.choices:
        words += ": " + ", ".join(f"`{choice}`" for choice in column.choices)
        words += " or another value the help names" if column.open_choices else ""
    return words


def _who(sheet: layout.Sheet, column: layout.Column) -> str:
    if column.computed:
        return "iteralab"
    return "you (required)" if column.required else "you"


def sheet_markdown(sheet: layout.Sheet, heading: str = "##") -> str:
    """One sheet: its purpose, then a table of its columns (a form: its fields)."""
    lines = [
        f"{heading} {sheet.name}",
        "",
        _cell(sheet.purpose) + "." if not sheet.purpose.endswith(".") else _cell(sheet.purpose),
        "",
    ]
    if sheet.since > 1:
        lines += [f"Added in layout version {sheet.since}.", ""]
    if sheet.kind == "text":
        lines += [
            f"{index}. {_cell(step.split('. ', 1)[-1])}"
            if step[:1].isdigit()
            else f"- {_cell(step)}"
            for index, step in enumerate(layout.GUIDE_STEPS, 1)
        ]
        return "\n".join(lines) + "\n"
    what = "field" if sheet.kind == "form" else "column"
    lines += [f"| {what} | kind | typed by | since | what it holds |", "|---|---|---|---|---|"]
    for column in sheet.all_columns:
        lines.append(
            f"| `{column.name}` | {_kind(column)} | {_who(sheet, column)} | "
            f"{column.since} | {_cell(column.help) or '&nbsp;'} |"
        )
    return "\n".join(lines) + "\n"


def workbook_markdown(sheets: Iterable[layout.Sheet] | None = None) -> str:
    """Every sheet of the layout, in workbook order."""
    sheets = layout.SHEETS if sheets is None else sheets
    head = (
        f"Layout version {layout.LAYOUT_VERSION} (this iteralab reads versions "
        f'{layout.OLDEST_READABLE} to {layout.LAYOUT_VERSION}). "typed by you" is a blue '
        'cell a person fills; "iteralab" is a grey cell the toolkit writes. A column '
        "ending in `_reason` says why the measurement beside it is empty.\n"
    )
    return "\n".join([head, *(sheet_markdown(sheet) for sheet in sheets)])


def protocol_examples(workbook: Path = EXAMPLE_WORKBOOK) -> str:
    """Every Protocol field, the example campaign's value and why the field is there."""
    from toolkit.workbook import store  # openpyxl: only when a page asks for it

    values = store.read(workbook).forms[layout.PROTOCOL.name]
    lines = ["| field | the sample campaign's value | why it is there |", "|---|---|---|"]
    for column in layout.PROTOCOL.all_columns:
        value = values.get(column.name)
        shown = "*(blank)*" if value in (None, "") else f"`{_cell(str(value))}`"
        lines.append(f"| `{column.name}` | {shown} | {_cell(column.help)} |")
    return "\n".join(lines) + "\n"


def error_kinds(base: type[errors.ToolkitError] = errors.ToolkitError) -> str:
    """Every error class the toolkit raises on purpose, with its exit code and meaning."""
    lines = ["| error | exit code | when |", "|---|---|---|"]

    def walk(cls: type[errors.ToolkitError], depth: int) -> None:
        doc = (cls.__doc__ or "").strip().split("\n\n")[0]
        doc = re.sub(r"\s*Exit code \d+\.", "", " ".join(doc.split()))
        lines.append(f"| {'&nbsp;' * 4 * depth}`{cls.__name__}` | {cls.exit_code} | {_cell(doc)} |")
        for sub in sorted(cls.__subclasses__(), key=lambda c: c.__name__):
            if sub.__module__ == errors.__name__:  # the tree as declared, whatever is imported
                walk(sub, depth + 1)

    walk(base, 0)
    return "\n".join(lines) + "\n"


def traceability(sheets: Iterable[layout.Sheet] | None = None) -> str:
    """Each code cited in the layout's help texts and the columns that cite it."""
    cited: dict[str, list[str]] = defaultdict(list)
    for sheet in layout.SHEETS if sheets is None else sheets:
        for column in sheet.all_columns:
            for code in CODE.findall(column.help):
                cited[code].append(f"{sheet.name}.{column.name}")
        for code in CODE.findall(sheet.purpose):
            cited[code].append(f"{sheet.name} (sheet)")

    def order(code: str) -> tuple[str, int]:
        return code[0], int(re.findall(r"\d+", code)[0])

    lines = ["| code | cited by (sheet.column) |", "|---|---|"]
    for code in sorted(cited, key=order):
        lines.append(f"| {code} | {', '.join(f'`{c}`' for c in dict.fromkeys(cited[code]))} |")
    return "\n".join(lines) + "\n"


def render(markdown: str) -> str:
    """``markdown`` with every generated marker replaced by its text."""

    def one(match: re.Match[str]) -> str:
        what, arg = match["what"], match["arg"]
        if what == "workbook":
            return workbook_markdown()
        if what == "sheet" and arg in layout.SHEET_BY_NAME:
            return sheet_markdown(layout.SHEET_BY_NAME[arg], heading="###")
        if what == "protocol-examples":
            return protocol_examples()
        if what == "errors":
            return error_kinds()
        if what == "traceability":
            return traceability()
        raise ValueError(f"unknown generated marker: {match[0]}")

    return _MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    """MkDocs hook: fill the page's generated markers."""
    return render(markdown)


#: The page mkdocs-click fills from the click commands; their help cites codes too.
CLI_PAGE = "reference/cli.md"


def on_page_content(html: str, page: Any, **_: Any) -> str:
    """MkDocs hook: the command-line reference without requirement codes."""
    return plain(html) if page.file.src_uri == CLI_PAGE else html
