"""A start line is held to its locked Variants row on every work column the series rules
compare (padding_side, kv_cache_dtype, engine, input_pipeline and request_rate too), a column
left blank at the lock included; the cluster label, a bookkeeping column a person may move
after the lock, is not one of them.

Real files: a copy of the quick demo campaign of tests/fixtures/layout3_campaign (locked at
layout 3, journal start lines written by the runner), its last start line rewritten as a
text editor would."""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tests.support.paths import FIXTURES
from toolkit.evidence import journal, provenance
from toolkit.evidence.work_columns import WORK_COLUMNS
from toolkit.workbook import store

FIXTURE = FIXTURES / "layout3_campaign"
NAME = "example_campaign.xlsx"


def _with_last_start(tmp_path: Path, **variant: Any) -> Path:
    """A copy of the fixture whose last start line's variant says ``variant``."""
    folder = tmp_path / "campaign"
    shutil.copytree(FIXTURE, folder)
    path = folder / NAME
    lines = journal.journal_path(path).read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[-2])
    start["spec"]["variant"].update(variant)
    lines[-2] = json.dumps(start)
    journal.journal_path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _refused(path: Path) -> dict[str, str]:
    return provenance.refusals(store.read(path), path, journal.read(path))


def test_the_honest_journal_is_borne_out(tmp_path: Path) -> None:
    assert _refused(_with_last_start(tmp_path)) == {}


def test_a_start_line_with_a_setting_left_blank_at_the_lock_is_refused(tmp_path: Path) -> None:
    refused = _refused(_with_last_start(tmp_path, padding_side="right"))
    assert list(refused) == ["a006-b1-fp32-r2-d4b5"]
    assert (
        "attempt 'a006-b1-fp32-r2-d4b5' ran variant 'b1-fp32' with padding_side 'right' by its "
        "start line's spec, but the locked Variants row says blank"
    ) in refused["a006-b1-fp32-r2-d4b5"]


def test_a_cluster_label_moved_after_the_lock_is_not_a_refusal(tmp_path: Path) -> None:
    assert _refused(_with_last_start(tmp_path, label="node-b")) == {}


def test_the_settings_are_the_work_columns_but_the_cluster_label() -> None:
    assert provenance.SETTINGS == tuple(c for c in WORK_COLUMNS if c != "label")
    assert {"padding_side", "kv_cache_dtype", "engine", "input_pipeline", "request_rate"} <= set(
        provenance.SETTINGS
    )


def _serving_journal(tmp_path: Path, rate: float | None = None) -> tuple[Path, list[Any]]:
    """The serving demo's workbook (two rates on one endpoint, locked at the current layout)
    with a start line for each variant as `iteralab run` writes it (its spec's variant the
    row as read; the second's request_rate ``rate`` when given), and their records."""
    from toolkit.commands import demo_serving
    from toolkit.evidence import run_log
    from toolkit.evidence.protocol import current_lock
    from toolkit.runner.spec import AttemptSpec

    book = demo_serving.prepare(tmp_path, "http://127.0.0.1:9", "served-model", quick=True)
    data = store.read(book)
    lock = current_lock(data)
    assert lock is not None
    run = run_log.new_run_id()
    run_log.started(book, run, pid=1)
    records = []
    for position, row in enumerate(data.tables["Variants"], start=1):
        attempt_id = f"a{position:03d}-{row['variant_id']}-r1-0000"
        variant = dict(row)
        if rate is not None and position == 2:
            variant["request_rate"] = rate
        spec = AttemptSpec(
            workbook=str(book),
            attempt_id=attempt_id,
            variant=variant,
            repetition=1,
            order_position=position,
            protocol=data.forms["Protocol"],
            protocol_sha256=lock.sha256,
            corpus_sha256="0" * 64,
            corpus_items=4,
            seed=0,
        )
        journal.append(book, journal.start(attempt_id, asdict(spec), "2026-12-08T10:00Z", run))
        attempt = {
            "attempt_id": attempt_id,
            "variant_id": row["variant_id"],
            "status": "completed",
            "repetition": 1,
            "seed": 0,
            "order_position": position,
            "protocol_sha256": lock.sha256,
            "predictions_path": f"requests/{attempt_id}.jsonl",
        }
        records.append({"attempt": attempt, "manifest": None})
    return book, records


def test_an_honest_serving_start_line_is_borne_out_on_every_setting(tmp_path: Path) -> None:
    book, records = _serving_journal(tmp_path)
    assert provenance.refusals(store.read(book), book, records) == {}


def test_a_serving_start_line_at_another_rate_is_refused(tmp_path: Path) -> None:
    book, records = _serving_journal(tmp_path, rate=8)
    refused = provenance.refusals(store.read(book), book, records)
    (attempt_id,) = refused
    assert (
        "ran variant 'rate-2' with request_rate 8 by its start line's spec, but the locked "
        in (refused[attempt_id])
    )
