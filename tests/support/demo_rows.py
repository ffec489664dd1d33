"""Attempts recorded by a real `iteralab demo` run, replayed into the example workbook.

``tests/fixtures/demo_campaign_rows.json`` holds the Attempts and Manifest rows of
one full run of the sample campaign (a plain ``iteralab demo``: series 1 and the
engine series 4, on a 2-core CPU), so the LibreOffice check runs on real
measurements without running the model in CI. Re-record after the example
workbook's protocol or variants change: ``iteralab demo DEMO_DIR``, then
``python -m tests.support.demo_rows DEMO_DIR/example_campaign.xlsx``. Rows recorded before
a layout added a column leave it blank, as any older row (validate reads a blank
measured column of a layout newer than the row as not recorded then).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from tests.support.paths import FIXTURES, SAMPLES

FIXTURE = FIXTURES / "demo_campaign_rows.json"
EXAMPLE = SAMPLES / "example_campaign.xlsx"


def rows() -> dict[str, Any]:
    """The recorded rows: protocol_sha256, Attempts, Manifest."""
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def workbook(folder: Path) -> Path:
    """The example workbook with the recorded rows appended, saved in ``folder``."""
    from toolkit.evidence import audit_chain, protocol
    from toolkit.workbook import store

    recorded = rows()
    data = store.read(EXAMPLE)
    lock = protocol.require_lock(data, EXAMPLE)
    assert lock == recorded["protocol_sha256"], (
        f"{EXAMPLE.name} changed since the demo rows were recorded: re-record them "
        "(python -m tests.support.demo_rows DEMO_DIR/example_campaign.xlsx)"
    )
    for row in recorded["Manifest"]:
        data.append("Manifest", row)
    for row in recorded["Attempts"]:
        data.append("Attempts", row)
    audit_chain.seal_older_rows(data)  # as iteralab saves the example's Audit rows
    path = folder / EXAMPLE.name
    store.save(data, path)
    return path


def _successes() -> dict[str, list[float]]:
    runs: dict[str, list[float]] = {}
    for a in rows()["Attempts"]:
        if (a["status"], a["ids_match"], a["excluded"], a["pre_amendment"]) == (
            "completed",
            "yes",
            "no",
            "no",
        ):
            runs.setdefault(a["variant_id"], []).append(a["measured_s"])
    return runs


def medians() -> dict[str, float]:
    """Median measured_s per variant over the successful runs, computed here independently."""
    return {vid: statistics.median(r) for vid, r in _successes().items()}


def successes() -> dict[str, int]:
    """Successful runs per variant."""
    return {vid: len(r) for vid, r in _successes().items()}


def record(demo_workbook: Path) -> None:
    """Write the fixture from a demo run's workbook."""
    from toolkit.evidence import protocol
    from toolkit.workbook import store

    data = store.read(demo_workbook)
    payload = {
        "protocol_sha256": protocol.require_lock(data, demo_workbook),
        "Attempts": data.tables["Attempts"],
        "Manifest": data.tables["Manifest"],
    }
    FIXTURE.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    record(Path(sys.argv[1]))
    print(f"wrote {FIXTURE}")
