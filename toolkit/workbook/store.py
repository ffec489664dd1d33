"""Read a workbook into plain data; save it safely (lock, temp file, replace, backup).

A save never leaves a half-written workbook: the new file is rendered next to
the old one, flushed to disk, and swapped in (:mod:`toolkit.plumbing.atomic`);
a file lock serialises writers; the previous version is kept as
``NAME.bak.xlsx`` (itself written whole, once the new file is on disk, so a
failed save never spoils it). A save that fails (disk full, permission denied)
leaves the workbook's bytes as they were and says what to do. Reading turns
any failure to parse the file into a :class:`WorkbookError` naming it: the
file is untrusted input.
"""

from __future__ import annotations

import contextlib
import errno
import stat
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from xlsxwriter.exceptions import FileCreateError

from toolkit import layout
from toolkit.errors import ToolkitError, WorkbookBusyError, WorkbookError
from toolkit.plumbing import beside
from toolkit.plumbing.atomic import copy_file, publish
from toolkit.plumbing.plain import not_plain
from toolkit.workbook import names, text_sheets, written
from toolkit.workbook.cells import Book, header_text, normalise
from toolkit.workbook.charts import workbook_charts
from toolkit.workbook.comments import cell_comments, split_reference
from toolkit.workbook.links import cell_links
from toolkit.workbook.model import Addition, Formula, WorkbookData
from toolkit.workbook.protection import passworded_sheets
from toolkit.workbook.render import cell_image, render
from toolkit.workbook.text import EXCEL_CELL_LIMIT, utf16_length
from toolkit.workbook.typed import as_typed

LOCK_TIMEOUT_S = 60
ZIP_MAGIC = b"PK\x03\x04"
#: An OLE2 container: an Excel 97-2003 .xls, or an xlsx encrypted with a password.
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def read(path: str | Path) -> WorkbookData:
    """Read every sheet of the workbook at ``path``.

    Raises WorkbookError naming the file, sheet and column when the file is not
    an xlsx workbook, a sheet or column is missing, or the layout is older.
    """
    path = Path(path)
    with _open_workbook(path) as handle:
        parts = _check_archive(handle, path)
        try:
            with Book(handle) as book:
                data = _read_book(book, path)
            if any(name.startswith("xl/comments") for name in parts):
                data.unkept += _typed_comments(handle)
            data.unkept += [
                Addition(
                    f"the hyperlink on {sheet}!{ref}" + (f" (to {target})" if target else ""),
                    sheet,
                )
                for sheet, ref, target in cell_links(handle)
            ]
            data.unkept += [
                Addition(
                    f"the password on the protection of sheet {name} (iteralab protects every "
                    "sheet without one and cannot write it again; Review > Unprotect Sheet "
                    "removes it)",
                    name,
                )
                for name in passworded_sheets(handle)
            ]
            if any(name.startswith("xl/charts/") for name in parts):
                data.charts = workbook_charts(data)
            return data
        except ToolkitError:
            raise
        except Exception as exc:  # any parse failure: the file is untrusted input
            why = f"damaged, or not a workbook ({type(exc).__name__}: {exc})"
            raise _unreadable(path, why) from exc


def _open_workbook(path: Path) -> IO[bytes]:
    """``path`` opened for reading, once it is known to be a zip archive; WorkbookError
    naming the file when there is none, it cannot be opened, or it is no zip at all."""
    if not path.exists():
        raise WorkbookError(
            f"{path}: no such workbook", hint=f"create one with `iteralab init {path}`"
        )
    kind = not_plain(path)
    if kind is not None:  # opening a named pipe would wait for a writer, perhaps forever
        raise WorkbookError(
            f"{path}: {kind}, not a workbook file; not read",
            hint="give the path of the .xlsx file itself (restore it from a copy if it was "
            "replaced)",
        )
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise WorkbookError(
            f"{path}: cannot open the workbook ({exc.strerror or exc})",
            hint="check that it is a file you may read",
        ) from exc
    try:
        _check_signature(handle, path)
    except BaseException:
        handle.close()
        raise
    return handle


def _unreadable(path: Path, why: str) -> WorkbookError:
    backup = backup_path(path)
    restore = (
        f"restore the backup {backup.name} (the version before the last save)"
        if backup.exists()
        else "restore it from a copy"
    )
    return WorkbookError(
        f"{path}: not a readable .xlsx workbook: {why}",
        hint=f"{restore}, or start from `iteralab init`",
    )


def _check_signature(handle: IO[bytes], path: Path) -> None:
    """Refuse, with a precise message, a file that is not a zip archive at all."""
    head = handle.read(8)
    handle.seek(0)
    if head.startswith(ZIP_MAGIC):
        return
    if not head:
        raise _unreadable(path, "the file is empty (0 bytes)")
    if head == OLE_MAGIC:
        raise WorkbookError(
            f"{path}: an Excel 97-2003 (.xls) file or a password-protected workbook, not .xlsx",
            hint="open it in Excel or LibreOffice and save it as .xlsx without a password",
        )
    raise _unreadable(path, "not a zip archive (an .xlsx file is one; a CSV or text file is not)")


#: Documented limits (docs/bad-inputs.md), checked on the sizes the archive declares before
#: anything is unpacked (the zip reader never unpacks more than a part declares). A
#: 10,000-attempt workbook unpacks to a few tens of MB, at a ratio of about 10.
MAX_PART_BYTES = 256 * 2**20
MAX_UNPACKED_BYTES = 1024 * 2**20
MAX_RATIO = 100
RATIO_FROM_BYTES = 16 * 2**20


def _over_limits(parts: list[zipfile.ZipInfo]) -> tuple[str, str] | None:
    """The first of the documented limits ``parts`` break: (what, the limit); None within."""
    for part in parts:
        ratio = part.file_size / max(part.compress_size, 1)
        if part.file_size > MAX_PART_BYTES or (
            part.file_size > RATIO_FROM_BYTES and ratio > MAX_RATIO
        ):
            return (
                f"part {part.filename} unpacks to {part.file_size:,} bytes ({ratio:,.0f} "
                "times its packed size)",
                f"{MAX_PART_BYTES:,} bytes a part, {MAX_RATIO} times packed",
            )
    total = sum(p.file_size for p in parts)
    if total > MAX_UNPACKED_BYTES:
        return f"unpacks to {total:,} bytes in all", f"{MAX_UNPACKED_BYTES:,} bytes in all"
    return None


def _check_archive(handle: IO[bytes], path: Path) -> list[str]:
    """Refuse a decompression bomb or an oversized workbook before parsing it.

    Returns the names of the archive's parts.
    """
    try:
        parts = zipfile.ZipFile(handle).infolist()
    except (zipfile.BadZipFile, OSError) as exc:
        raise _unreadable(
            path, f"damaged, or not a workbook ({type(exc).__name__}: {exc})"
        ) from exc
    finally:
        handle.seek(0)
    over = _over_limits(parts)
    if over is not None:
        raise WorkbookError(
            f"{path}: {over[0]}: over the limits of a campaign workbook ({over[1]}); not read",
            hint="this is not a workbook iteralab wrote (or it was padded on purpose); "
            "restore the campaign's workbook from a copy",
        )
    return [p.filename for p in parts]


def _sheet_of(archive: zipfile.ZipFile, part: str) -> str | None:
    """The sheet name a worksheet part holds (from workbook.xml and its relationships)."""
    import xml.etree.ElementTree as ElementTree

    spreadsheet = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
    relation = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
    try:
        targets = {
            r.get("Id"): "xl/" + str(r.get("Target")).removeprefix("/xl/")
            for r in ElementTree.fromstring(archive.read("xl/_rels/workbook.xml.rels"))
        }
        for sheet in ElementTree.fromstring(archive.read("xl/workbook.xml")).iter(
            spreadsheet + "sheet"
        ):
            if targets.get(sheet.get(relation)) == part:
                return sheet.get("name")
    except (KeyError, ElementTree.ParseError):
        pass
    return None


def _check_rendered(temp: Path, path: Path) -> None:
    """Refuse to publish a rendering that :func:`read` would refuse: the campaign outgrew
    one workbook (about 180,000 attempts make a 256 MiB Attempts part)."""
    with zipfile.ZipFile(temp) as archive:
        parts = archive.infolist()
        over = _over_limits(parts)
        if over is None:
            return
        largest = max(parts, key=lambda p: p.file_size).filename
        sheet = _sheet_of(archive, largest)
    raise WorkbookError(
        f"{path}: saving would make a workbook iteralab could not read again: {over[0]}, "
        f"over {over[1]}"
        + (f" (the largest part is sheet {sheet})" if sheet else "")
        + "; the workbook is unchanged",
        hint="the campaign has outgrown one workbook: keep this one as it is (the journal "
        "beside it keeps any records not in it) and continue in a new campaign workbook "
        "(`iteralab init`, then lock the same protocol)",
    )


def _read_book(book: Book, path: Path) -> WorkbookData:
    if "Guide" not in book.sheetnames:
        raise _missing_sheets(path, ["Guide"])
    version = _readable_version(_layout_version(book), path)
    missing = [
        s.name for s in layout.SHEETS if s.name not in book.sheetnames and s.since <= version
    ]
    if missing:
        raise _missing_sheets(path, missing)
    data = WorkbookData.empty()
    data.layout_version = version
    data.unkept += [
        Addition(f"sheet {name!r}", name)
        for name in book.sheetnames
        if name not in layout.SHEET_BY_NAME
    ]
    for sheet in layout.SHEETS:
        if sheet.name not in book.sheetnames:
            continue  # newer than the workbook's layout: it reads empty
        formulas: dict[tuple[int, int], Formula] = {}
        rows: Iterator[Sequence[Any]] = book.rows(sheet.name)
        if sheet.name in FORMULA_PASS:
            formulas, errors = book.formulas(
                sheet.name, max_col=2 if sheet.kind == "form" else None
            )
            if errors:
                rows = _with_errors(rows, errors)
        elif sheet.name in SCANNED_SHEETS:
            formulas = book.typed_formulas(sheet.name)
        if sheet.kind == "text":
            formulas, _ = book.formulas(sheet.name)
            sealed = book.defined_name(text_sheets.NAME)
            data.unkept += text_sheets.typed_cells(sheet.name, rows, formulas, sealed)
            continue
        if sheet.kind == "form":
            form_rows = list(rows)
            data.forms[sheet.name] = _read_form(form_rows, sheet, path, data.unkept, version)
            found = _form_formulas(formulas, form_rows)
        elif sheet.kind == "table":
            header, records, numbers = _read_table(rows, sheet, path, data.unkept, version)
            data.tables[sheet.name] = records
            data.row_numbers[sheet.name] = numbers
            found = _table_formulas(formulas, header, numbers)
        else:
            continue
        # Formula sheets keep theirs (even none); a typed sheet's are kept for validation
        # to name them (formulas typed where a value belongs).
        if sheet.name in layout.FORMULA_SHEETS or found:
            data.formulas[sheet.name] = found
    as_typed(data)  # numbers in text cells, Excel dates without their UTC offset
    data.unkept += _typed_summary_rows(data)
    data.unkept += written.typed_notes(data, book.defined_name(written.NAME))
    data.unkept += names.own_names(book.defined_names())
    return data


def _typed_summary_rows(data: WorkbookData) -> list[Addition]:
    """Summary rows a person added: the report writes each row with its formulas and
    rewrites the sheet, so a row without any would vanish at the next report."""
    sheet = layout.SUMMARY.name
    with_formulas = {i for i, _ in data.formulas.get(sheet, {})}
    if not with_formulas:
        return []  # never reported, or saved by a program that dropped every formula
    return [
        Addition(
            f"Summary row {data.excel_row(sheet, i)} (typed: the report writes "
            "every row of this sheet itself)",
            sheet,
            data.excel_row(sheet, i),
            "",
        )
        for i in range(len(data.tables[sheet]))
        if i not in with_formulas
    ]


def _typed_comments(handle: IO[bytes]) -> list[Addition]:
    """The cell comments a save would drop: all but the header notes it writes itself (on a
    table's header row; an older iteralab worded some otherwise, so any there counts)."""
    found = []
    for sheet_name, ref, text in cell_comments(handle):
        sheet = layout.SHEET_BY_NAME.get(sheet_name)
        if sheet is not None and sheet.kind == "table" and split_reference(ref)[1] == 1:
            continue
        shown = text if len(text) <= 40 else text[:37] + "..."
        found.append(Addition(f"the comment {shown!r} on {sheet_name}!{ref}", sheet_name, None, ""))
    return found


def _missing_sheets(path: Path, missing: list[str]) -> WorkbookError:
    return WorkbookError(
        f"{path}: missing sheet(s) {', '.join(missing)}",
        hint="this is not an iteralab workbook, or sheets were renamed or deleted; "
        "restore them or start from `iteralab init`",
    )


def _readable_version(version: int | None, path: Path) -> int:
    """The workbook's layout version when this iteralab reads it; else a WorkbookError."""
    if version is not None and layout.OLDEST_READABLE <= version <= layout.LAYOUT_VERSION:
        return version
    if version is not None and version > layout.LAYOUT_VERSION:
        raise WorkbookError(
            f"{path}: layout version {version}, written by a newer iteralab; this one reads "
            f"layout versions {layout.OLDEST_READABLE} to {layout.LAYOUT_VERSION}",
            hint="upgrade iteralab (pip install -U iteragpu-lab) and run the command again; "
            "the workbook is unchanged",
        )
    found = "no layout version in Guide!A2" if version is None else f"layout version {version}"
    raise WorkbookError(
        f"{path}: {found}; this iteralab reads layout versions {layout.OLDEST_READABLE} to "
        f"{layout.LAYOUT_VERSION}",
        hint="migrate: rename this file, `iteralab init` a new workbook under the old "
        "name, copy your Protocol, Variants, Tariffs and Schedule rows into it, lock it, "
        "and replay the attempts with `iteralab ingest` (docs/bad-inputs.md)",
    )


#: Small sheets a person types, checked for formulas in their cells (Schedule is read with
#: the formula sheets; Attempts and Manifest, large, are written by the toolkit).
TYPED_SHEETS = tuple(
    s.name
    for s in layout.SHEETS
    if s.name in layout.INPUT_SHEETS
    and s.name not in layout.FORMULA_SHEETS
    and s.name not in (layout.ATTEMPTS.name, layout.MANIFEST.name)
)
#: The sheets read a second time, by openpyxl, for their formulas and error values.
FORMULA_PASS = frozenset(layout.FORMULA_SHEETS + TYPED_SHEETS)
#: Large sheets iteralab writes as values: a scan of their XML finds a formula a person typed.
SCANNED_SHEETS = frozenset((layout.ATTEMPTS.name, layout.MANIFEST.name))


def _with_errors(
    rows: Iterator[Sequence[Any]], errors: dict[tuple[int, int], str]
) -> Iterator[Sequence[Any]]:
    """``rows`` with each error value (``#N/A``) put back where calamine gave a blank."""
    by_row: dict[int, list[tuple[int, str]]] = {}
    for (excel_row, column), text in errors.items():
        by_row.setdefault(excel_row, []).append((column, text))
    for excel_row, row in enumerate(rows, start=1):
        cells = by_row.get(excel_row)
        if cells:
            row = list(row)
            for column, text in cells:
                row.extend([None] * (column - len(row)))
                row[column - 1] = text
        yield row


def _form_formulas(
    formulas: dict[tuple[int, int], Formula], rows: list[Sequence[Any]]
) -> dict[tuple[int, str], Formula]:
    """A form's formulas (its column B, below the header) keyed (0, field)."""
    found: dict[tuple[int, str], Formula] = {}
    for (excel_row, column), formula in sorted(formulas.items()):
        if column != 2 or excel_row < 2 or excel_row > len(rows) or not rows[excel_row - 1]:
            continue
        field = rows[excel_row - 1][0]
        if isinstance(field, str) and field.strip():
            found[(0, field.strip())] = formula
    return found


def _table_formulas(
    formulas: dict[tuple[int, int], Formula], header: list[str], numbers: list[int]
) -> dict[tuple[int, str], Formula]:
    """A table's formulas by (row index, column), as :class:`WorkbookData` keeps them.

    A formula in a row read as blank (no row index) is left out, as is the header's.
    """
    index = {excel_row: i for i, excel_row in enumerate(numbers)}
    found: dict[tuple[int, str], Formula] = {}
    for (excel_row, column), formula in sorted(formulas.items()):
        if excel_row in index:
            name = header[column - 1] if column <= len(header) else ""
            found[(index[excel_row], name)] = formula
    return found


def _layout_version(book: Book) -> int | None:
    rows = book.rows("Guide")
    next(rows, None)
    second = next(rows, ())
    value = second[0] if second else None
    if isinstance(value, str) and value.startswith("layout_version:"):
        with contextlib.suppress(ValueError):
            return int(value.split(":", 1)[1])
    return None


def _read_form(
    rows: list[Sequence[Any]], sheet: layout.Sheet, path: Path, unkept: list[Addition], version: int
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    first_row: dict[str, int] = {}
    known = set(sheet.names)
    width = len(layout.FORM_HEADER)
    for excel_row, row in enumerate(rows[1:], start=2):
        field = row[0].strip() if row and isinstance(row[0], str) else ""
        beyond = [i for i in range(width, len(row)) if normalise(row[i]) is not None]
        if beyond:  # a note beside the form: the save writes field, value and help only
            cell = f"{layout.letter(beyond[0] + 1)}{excel_row}"
            unkept.append(
                Addition(
                    f"{sheet.name}!{cell} (a value right of the help column)",
                    sheet.name,
                    excel_row,
                    field,
                )
            )
        if not field:
            if len(row) > 1 and normalise(row[1]) is not None:
                unkept.append(
                    Addition(
                        f"{sheet.name}!B{excel_row} (a value with no field name in column A)",
                        sheet.name,
                        excel_row,
                        "",
                    )
                )
            continue
        if field in first_row:
            unkept.append(
                Addition(
                    f"a second {field!r} field at row {excel_row} of "
                    f"{sheet.name} (the first is row {first_row[field]})",
                    sheet.name,
                    excel_row,
                    field,
                )
            )
            continue
        first_row[field] = excel_row
        values[field] = normalise(row[1] if len(row) > 1 else None)
        if (
            isinstance(values[field], str)
            and len(values[field]) > EXCEL_CELL_LIMIT // 2
            and utf16_length(values[field]) > EXCEL_CELL_LIMIT
        ):
            unkept.append(
                Addition(
                    f"{sheet.name}!B{excel_row} ({field}: {utf16_length(values[field]):,} "
                    f"characters, over the {EXCEL_CELL_LIMIT:,} an Excel cell keeps; a save would "
                    "cut it)",
                    sheet.name,
                    excel_row,
                    field,
                )
            )
        if field not in known:
            unkept.append(
                Addition(
                    f"row {excel_row} ({field!r}) of {sheet.name}", sheet.name, excel_row, field
                )
            )
    missing = [c.name for c in sheet.all_columns if c.name not in values and c.since <= version]
    if missing:
        raise WorkbookError(
            f"{path}: sheet {sheet.name} lacks field(s) {', '.join(missing)} in column A",
            hint="restore the field rows (their names in column A) or start from `iteralab init`",
        )
    return {c.name: values.get(c.name) for c in sheet.all_columns}


def _read_table(
    rows_iter: Iterator[Sequence[Any]],
    sheet: layout.Sheet,
    path: Path,
    unkept: list[Addition],
    version: int,
) -> tuple[list[str], list[dict[str, Any]], list[int]]:
    """The header, the rows that hold a value (as records) and their Excel row numbers."""
    header = [header_text(h) for h in next(rows_iter, ())]
    positions = {name: i for i, name in enumerate(header) if name}
    known = set(sheet.names)
    unkept += [
        Addition(f"column {name!r} of {sheet.name} ({layout.letter(i + 1)}1)", sheet.name, 1, name)
        for name, i in positions.items()
        if name not in known
    ]
    missing = [c.name for c in sheet.all_columns if c.name not in positions and c.since <= version]
    if missing:
        raise WorkbookError(
            f"{path}: sheet {sheet.name} lacks column(s) {', '.join(missing)} in row 1",
            hint="restore the header row (names exactly as in `iteralab init`'s template)",
        )
    rows: list[dict[str, Any]] = []
    numbers: list[int] = []
    # A column newer than the workbook's layout is absent: it reads empty (position past
    # any row's end).
    where = [(name, positions.get(name, 1 << 30)) for name in sheet.names]
    headless = [i for i, name in enumerate(header) if not name]
    stray = 0
    # One object per distinct text: a column repeats its few values (a variant, a status, a
    # reason) down the sheet, and the reader gives each cell its own copy (at 10,000
    # attempts 315,000 texts, 50,000 distinct: a third of what the rows hold).
    texts: dict[str, str] = {}
    for excel_row, values in enumerate(rows_iter, start=2):
        width = len(values)
        record = {
            name: _one_copy(normalise(values[i]), texts) if i < width else None for name, i in where
        }
        if any(v is not None for v in record.values()):
            rows.append(record)
            numbers.append(excel_row)
        if (width > len(header) or headless) and stray < MAX_STRAY_NAMED:
            for i in [*headless, *range(len(header), width)]:
                if i < width and normalise(values[i]) is not None and stray < MAX_STRAY_NAMED:
                    stray += 1
                    unkept.append(
                        Addition(
                            f"{sheet.name}!{layout.letter(i + 1)}{excel_row} (a value in a column "
                            "with no header)",
                            sheet.name,
                            excel_row,
                            "",
                        )
                    )
    return header, rows, numbers


def _one_copy(value: Any, texts: dict[str, str]) -> Any:
    """``value``, or the equal text met before it (the one copy ``texts`` keeps)."""
    return texts.setdefault(value, value) if type(value) is str else value


#: Values in headerless columns named per sheet (the first ones say where to look).
MAX_STRAY_NAMED = 20


def check_keepable(data: WorkbookData, path: Path) -> None:
    """Refuse, before anything is written, a workbook holding what a save would drop.

    The store writes the sheets, columns and form rows of :mod:`toolkit.layout`;
    a sheet, a column or a form row a person added would vanish silently.
    """
    if not data.unkept:
        return
    listed = "; ".join(map(str, data.unkept[:8])) + (
        f"; and {len(data.unkept) - 8} more" if len(data.unkept) > 8 else ""
    )
    raise WorkbookError(
        f"{path}: holds what iteralab does not keep when it saves: {listed}; nothing was written",
        hint="keep such notes in a file beside the workbook, in a variant's description or "
        "in the Decision memo (reasons, remaining_uncertainty); remove them here, then run "
        "the command again",
    )


def unchanged(read: WorkbookData, data: WorkbookData) -> bool:
    """Whether saving ``data`` would write what ``read`` was read from, cell for cell.

    ``read`` is a workbook as :func:`read` gave it, in containers of its own
    (rows included, so that changes made to ``data`` since do not reach it);
    ``data`` what a command made of it. Compared: the layout version, every
    form field, every table's rows, their places (a save writes them from row
    2, one after the other) and values as written (:func:`render.cell_image`),
    formulas, charts. A row equal as Python values to the row read, in a
    table without formulas on either side, is not compared cell by cell (a
    large Attempts sheet: the comparison costs milliseconds). Not compared:
    what a save writes the same from the same data (formats, dropdowns,
    header notes, the Guide), which another iteralab version may have written
    otherwise. Anything a save would refuse (``data.unkept``) counts as a
    change, so that the save is tried and refuses.
    """
    if (
        data.unkept
        or read.unkept
        or data.layout_version != layout.LAYOUT_VERSION
        or read.layout_version != data.layout_version
        or read.charts != data.charts
    ):
        return False
    for sheet in layout.SHEETS:
        if sheet.kind == "form":
            old, new = read.forms.get(sheet.name, {}), data.forms.get(sheet.name, {})
            kept = read.formulas.get(sheet.name, {})
            for column in sheet.all_columns:
                before = old.get(column.name)
                formula = kept.get((0, column.name))
                if formula is not None:
                    before = Formula(formula.text, before, formula.array)
                if cell_image(before) != cell_image(new.get(column.name)):
                    return False
        elif sheet.kind == "table" and not _same_table(read, data, sheet):
            return False
    return True


def _same_table(read: WorkbookData, data: WorkbookData, sheet: layout.Sheet) -> bool:
    old, new = read.tables.get(sheet.name, []), data.tables.get(sheet.name, [])
    if len(old) != len(new) or read.row_numbers.get(sheet.name, []) != list(range(2, 2 + len(old))):
        return False
    old_formulas = read.formulas.get(sheet.name, {})
    new_formulas = data.formulas.get(sheet.name, {})
    plain = not old_formulas and not new_formulas
    for i, (before_row, after_row) in enumerate(zip(old, new, strict=True)):
        if plain and before_row == after_row:
            continue
        for name in sheet.names:
            before, after = before_row.get(name), after_row.get(name)
            formula = old_formulas.get((i, name))
            if formula is not None:
                before = Formula(formula.text, before, formula.array)
            formula = new_formulas.get((i, name))  # as render merges a kept formula
            if formula is not None and not isinstance(after, Formula):
                after = Formula(formula.text, after, formula.array)
            if cell_image(before) != cell_image(after):
                return False
    return True


def backup_path(path: Path) -> Path:
    """Where the previous version of ``path`` is kept."""
    return beside.backup(path)


def office_lock_files(path: Path) -> list[Path]:
    """Lock files Excel (``~$name``) or LibreOffice (``.~lock.name#``) leave while editing."""
    candidates = [path.with_name("~$" + path.name), path.with_name(f".~lock.{path.name}#")]
    return [p for p in candidates if p.exists()]


def save(data: WorkbookData, path: str | Path) -> None:
    """Render ``data`` to ``path`` atomically, keeping the previous version as backup.

    What ``data`` holds is written as it is: the derived sheets keep the
    formulas and charts they were read with (the report recomputes them; the
    store never does). The file keeps its mode; a read-only workbook is
    refused. The caller holds :func:`writer_lock` when the data was read from
    ``path``. Raises WorkbookError, with the workbook unchanged, when any step
    fails.
    """
    path = writable_path(path)
    check_keepable(data, path)
    _refuse_read_only(path)
    backup = backup_path(path)

    def keep_backup() -> None:
        if path.exists():
            copy_file(path, backup)

    try:
        publish(
            path,
            lambda temp: render(data, temp),
            verify=lambda temp: _check_rendered(temp, path),
            before_replace=keep_backup,
        )
    except OSError as exc:
        raise _save_error(path, exc) from exc
    except FileCreateError as exc:  # xlsxwriter's wrapping of a disk full or a denied write
        raise _save_error(path, _os_cause(exc)) from exc


def create(data: WorkbookData, path: str | Path) -> Path:
    """Write ``data`` as a new workbook at ``path``, whole; never over an existing file.

    Raises FileExistsError when ``path`` exists, WorkbookError when writing fails.
    """
    path = Path(path)
    try:
        return publish(
            path,
            lambda temp: render(data, temp),
            verify=lambda temp: _check_rendered(temp, path),
            overwrite=False,
        )
    except FileExistsError:
        raise
    except OSError as exc:
        raise _save_error(path, exc) from exc
    except FileCreateError as exc:
        raise _save_error(path, _os_cause(exc)) from exc


def _os_cause(exc: Exception) -> OSError:
    """The system's refusal behind a library's exception (an OSError it wrapped)."""
    cause = exc.__context__ or exc.__cause__
    return cause if isinstance(cause, OSError) else OSError(errno.EIO, str(exc))


def _refuse_read_only(path: Path) -> None:
    """A workbook without its owner's write bit was made read-only on purpose: say so."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return
    if not mode & stat.S_IWUSR:
        raise WorkbookError(
            f"{path}: the workbook is read-only; it is unchanged",
            hint=f"if it may change, make it writable (chmod u+w {path}); "
            "else copy it and work on the copy",
        )


def _save_error(path: Path, exc: OSError) -> WorkbookError:
    why = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        hint = f"free disk space in {path.parent}, then run the command again"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        hint = (
            f"make {path.parent} writable for you (and the workbook not read-only; on "
            "Windows close it in Excel), then run the command again"
        )
    elif exc.errno == errno.EROFS:
        hint = "copy the workbook to a writable folder and run the command there"
    else:
        hint = "fix the cause above, then run the command again"
    return WorkbookError(f"{path}: could not save ({why}); the workbook is unchanged", hint=hint)


def writable_path(path: str | Path) -> Path:
    """Where a save of ``path`` writes: the file a symbolic link names (a save writes through
    it, the link stays); a name not ending in .xlsx is refused (a save writes a plain .xlsx
    package: under .xlsm it would drop the macros and share the .xlsx's backup name)."""
    path = Path(path)
    if path.suffix.lower() != ".xlsx":
        raise WorkbookError(
            f"{path}: iteralab writes .xlsx workbooks only, not "
            f"{path.suffix or 'a name without an extension'}; it is unchanged",
            hint="save a copy as .xlsx (File > Save As) and give that file",
        )
    return path.resolve() if path.is_symlink() else path


@contextlib.contextmanager
def writer_lock(path: str | Path) -> Iterator[None]:
    """Hold the workbook's writer lock; refuse while Excel or LibreOffice has it open."""
    path = writable_path(path)
    # A missing file, or one that is no workbook (an .xls renamed .xlsx), is refused before
    # the lock file exists: a refusal leaves nothing beside it.
    _open_workbook(path).close()
    busy = office_lock_files(path)
    if busy:
        raise WorkbookBusyError(
            f"{path}: open in Excel or LibreOffice (found {busy[0].name})",
            hint="save and close it there, then run the command again",
        )
    import filelock  # only a command that writes takes the lock

    lock = filelock.FileLock(str(beside.workbook_lock(path)), timeout=LOCK_TIMEOUT_S)
    try:
        lock.acquire()
    except filelock.Timeout as exc:
        raise WorkbookBusyError(
            f"{path}: another iteralab command has been writing it for {LOCK_TIMEOUT_S} s",
            hint="wait for it to finish; remove the .lock file only if no iteralab runs",
        ) from exc
    except OSError as exc:
        raise WorkbookError(
            f"{path}: cannot create the writer lock {path.name}.lock "
            f"({exc.strerror or exc}); the workbook is unchanged",
            hint=f"make {path.parent} writable for you, or copy the workbook to a writable folder",
        ) from exc
    try:
        yield
    finally:
        lock.release()
