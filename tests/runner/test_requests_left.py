"""The interrupted row of a serving attempt killed without its record points at the requests
file it left: path, SHA-256 and, when its lines are whole, the requests it holds."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from toolkit.plumbing.digests import file_sha256
from toolkit.runner.spec import AttemptSpec
from toolkit.runner.tasks.kinds import KINDS
from toolkit.serving.records import MEASURED, WARMUP, Record


def requests_left(spec: AttemptSpec) -> tuple[str, str, str] | None:
    return KINDS["serving"].left_behind(spec)


def _spec(tmp_path: Path) -> AttemptSpec:
    return AttemptSpec(
        workbook=str(tmp_path / "campaign.xlsx"),
        attempt_id="a001-r1-r1-0a1b",
        variant={"variant_id": "r1"},
        repetition=1,
        order_position=1,
        protocol={"task": "serving"},
        protocol_sha256="0" * 64,
        corpus_sha256="1" * 64,
        corpus_items=3,
    )


def _line(index: int, phase: str, ok: bool) -> str:
    record = Record(index=index, phase=phase, prompt_id="p1", scheduled_s=0.0, ok=ok)
    return json.dumps(asdict(record)) + "\n"


def _write(spec: AttemptSpec, text: str) -> str:
    spec.predictions_file.parent.mkdir(parents=True, exist_ok=True)
    spec.predictions_file.write_text(text, encoding="utf-8")
    return spec.predictions_file.relative_to(spec.base).as_posix()


def test_whole_lines_are_counted_by_phase_and_outcome(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    relative = _write(
        spec, _line(-1, WARMUP, True) + _line(0, MEASURED, True) + _line(1, MEASURED, False)
    )
    assert requests_left(spec) == (
        relative,
        file_sha256(spec.predictions_file),
        f"requests file {relative} kept: 3 requests finished before the attempt ended: "
        "2 measured (1 completed, 1 failed) and 1 warm-up",
    )


def test_a_cut_last_line_is_named_and_nothing_counted(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    relative = _write(spec, _line(0, MEASURED, True) + _line(1, MEASURED, True)[:20])
    assert requests_left(spec) == (
        relative,
        file_sha256(spec.predictions_file),
        f"requests file {relative} kept: its last line was cut as the attempt ended, so "
        "its requests are not counted",
    )


def test_no_file_or_an_empty_one_leaves_nothing_to_point_at(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    assert requests_left(spec) is None
    _write(spec, "")
    assert requests_left(spec) is None


def test_another_kind_leaves_nothing_to_point_at(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    _write(spec, _line(0, MEASURED, True))
    assert KINDS["generation"].left_behind(spec) is None
