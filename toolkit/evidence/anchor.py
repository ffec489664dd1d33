"""The chain's anchor: how many attempt rows the workbook held and the last one's hash,
kept outside the Attempts sheet, in ``NAME.chain.json`` beside the workbook.

The hash chain shows an edited or moved row, but not a tail cut off together with the
journal and the predictions files: the rows that remain still chain. Each ingestion
writes the anchor; validation names a sheet that no longer reaches it. (A forger who
also rewrites the anchor is not stopped: archived copies of it are the witness.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolkit.evidence.audit_chain import AUDIT, SINCE, campaign_head
from toolkit.evidence.chain import SHEET, cell_value
from toolkit.evidence.journal import journal_path
from toolkit.findings import Finding
from toolkit.plumbing import beside
from toolkit.plumbing.atomic import write_text
from toolkit.plumbing.clock import now_text
from toolkit.plumbing.plain import not_plain
from toolkit.workbook.model import WorkbookData

#: What a re-anchor does, as the anchor findings say it.
REANCHOR_EFFECT = (
    "it anchors the rows as they stand and logs the reason and the anchor it replaces in Audit"
)


def anchor_path(workbook: str | Path) -> Path:
    """``NAME.chain.json`` beside ``NAME.xlsx``."""
    return beside.anchor(workbook)


def write_anchor(data: WorkbookData, workbook: str | Path, *, over: bool = False) -> bool:
    """Record the number of attempt and Audit rows and each chain's last hash (after a save);
    return whether it was written.

    The anchor only moves forward: one the workbook no longer reaches (rows cut from the
    end) is kept as it is, so that the finding stays until the workbook is restored, rather
    than the cut being sealed over by the next save. ``over`` writes it all the same: a
    re-anchor a person asked for, its reason and the anchor it replaces logged in Audit by
    the caller (:func:`toolkit.editing.reanchor`). A missing anchor is written again from
    the workbook as it stands (validate named it until then).
    """
    exists = anchor_path(workbook).exists()
    if not over and exists and any(f.check == "anchor" for f in anchor_findings(data, workbook)):
        return False
    rows, audit = data.tables[SHEET], data.tables[AUDIT]
    head = cell_value(rows[-1].get("row_sha256")) if rows else None
    audit_head = cell_value(audit[-1].get("row_sha256")) if audit else None
    write_text(
        anchor_path(workbook),
        json.dumps(
            {
                "attempts": len(rows),
                "head": head,
                "audit_rows": len(audit),
                "audit_head": audit_head,
                "campaign_head": campaign_head(data),
                "updated_at": now_text(),
                "journal": journal_path(workbook).exists(),
            },
            sort_keys=True,
        )
        + "\n",
    )
    return True


def recorded_anchor(workbook: str | Path) -> dict[str, Any] | None:
    """What ``NAME.chain.json`` says, as read; None when it is missing, unreadable or no
    JSON object (a re-anchor logs it as it was)."""
    path = anchor_path(workbook)
    if not_plain(path) is not None:
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def _missing_anchor(data: WorkbookData, path: Path, journal: Path) -> list[Finding]:
    """A finding when the anchor is missing though the Attempts sheet holds sealed rows and
    the journal is beside the workbook: every save since the first sealed row wrote it, so
    it was deleted or not copied along. (A workbook alone, handed on without its folder, has
    neither; its missing predictions files are named.)"""
    sealed = sum(cell_value(r.get("row_sha256")) is not None for r in data.tables[SHEET])
    if not sealed or not journal.exists():
        return []
    return [
        Finding(
            SHEET,
            None,
            "",
            "anchor",
            f"{path.name} is missing beside the workbook and its journal, though the Attempts "
            f"sheet holds {sealed} sealed row(s): every save since the first wrote it, so it was deleted "
            "or not copied along, and rows cut from the end of the sheet (with their journal "
            "lines and predictions files) can no longer be seen; restore it from a copy of "
            "the campaign folder (the next command that saves writes a new one from the rows "
            "as they stand)",
        )
    ]


def anchor_findings(data: WorkbookData, workbook: str | Path) -> list[Finding]:
    """A finding when the Attempts sheet no longer reaches the anchor's row and hash."""
    path = anchor_path(workbook)
    try:
        kind = not_plain(path)
        if kind is not None:  # opening a named pipe would wait for a writer
            raise OSError(f"{kind}, not a plain file")
        anchor: Any = json.loads(path.read_text(encoding="utf-8"))
        count, head = int(anchor["attempts"]), anchor["head"]
    except FileNotFoundError:
        return _missing_anchor(data, path, journal_path(workbook))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [
            Finding(
                SHEET,
                None,
                "",
                "anchor",
                f"{path.name} cannot be read ({exc}): "
                "restore it from a copy of the campaign folder",
            )
        ]
    rows = data.tables[SHEET]
    found = _audit_anchor_findings(data, anchor, path.name)
    if count == 0:
        return found
    # An anchor written at an ingestion (or before it said so) had the journal beside it.
    if anchor.get("journal", True) and not journal_path(workbook).exists():
        found.append(
            Finding(
                SHEET,
                None,
                "",
                "journal",
                (
                    f"{journal_path(workbook).name} is missing beside the workbook, though {path.name} "
                    f"says {count} attempt row(s) were ingested from it: the runner's record of every "
                    "attempt is gone, and edits are checked by the chain alone; restore it from a copy "
                    "of the campaign folder (or move it beside the workbook)"
                ),
            )
        )
    if len(rows) >= count and cell_value(rows[count - 1].get("row_sha256")) == head:
        return found
    where = (
        f"the sheet holds {len(rows)}"
        if len(rows) < count
        else f"row {count} of the sheet does not end in that hash"
    )
    return found + [
        Finding(
            SHEET,
            None,
            "row_sha256",
            "anchor",
            f"{path.name} says the workbook held {count} attempt row(s), the "
            f"last sealed {str(head)[:12]}...; {where}: rows were cut from the "
            "end (with the journal?): restore the workbook, its journal and "
            "predictions from a copy of the campaign folder (`iteralab ingest` restores the "
            "rows the journal still holds; a copy saved over the workbook whose edits are to "
            f'be kept: `iteralab verify --reanchor --reason "..."`, {REANCHOR_EFFECT})',
        )
    ]


def _audit_anchor_findings(data: WorkbookData, anchor: Any, name: str) -> list[Finding]:
    """A finding when the Audit sheet no longer reaches the anchor's Audit row and hash (its
    last logged rows were cut off); an anchor written before Audit rows were sealed has none."""
    count, head = anchor.get("audit_rows"), anchor.get("audit_head")
    audit = data.tables[AUDIT]
    if not isinstance(count, int) or count <= 0 or data.layout_version < SINCE:
        return []
    if len(audit) >= count and cell_value(audit[count - 1].get("row_sha256")) == head:
        return []
    where = (
        f"the sheet holds {len(audit)}"
        if len(audit) < count
        else f"row {count + 1} of the sheet does not end in that hash"
    )
    return [
        Finding(
            AUDIT,
            None,
            "row_sha256",
            "anchor",
            f"{name} says the Audit sheet held {count} logged row(s), the last sealed "
            f"{str(head)[:12]}...; {where}: logged rows (a lock, prices, an "
            "exclusion) were deleted: restore the workbook from a copy (.bak.xlsx) "
            "of the campaign folder; or, when a copy saved over the workbook (a "
            "spreadsheet program's, opened before those rows were logged) holds edits to keep, "
            f'keep it and run `iteralab verify --reanchor --reason "..."`: {REANCHOR_EFFECT}',
        )
    ]
