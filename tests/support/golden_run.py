"""A recorded run of the runner under a fixed clock, kept to show that a refactor of
``toolkit/runner`` leaves journal records and workbook cells as they were.

Support code, not tests: :func:`capture` runs two small campaigns in this process
(process policy ``shared``): a classification campaign of four variants (dynamic
padding in file order, max-length padding sorted by length, an injected failure, and
one whose model cannot load) and a generation campaign of three (one sorted); in each, one variant
fails midway by an injected fault.
Every clock the records read (``now_text``, the run's random tag) is fixed; what still
varies from run to run (durations, rates, memory peaks, the peak probe, the host's load
and the sentences that name it, the hashes over them) is masked by :func:`normalise`.
``tests/fixtures/golden_run.json`` holds the result captured before the runner was split into task
kinds; regenerate it (only on a commit whose records are known right) with
``python -m tests.support.golden_run``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

from tests.support.builders import (
    gen_variant,
    make_campaign,
    make_generation_campaign,
    variant,
    without_preflight,
)
from tests.support.paths import FIXTURES

FIXTURE = FIXTURES / "golden_run.json"
#: A failure midway through the measured window of each campaign's b1-fault variant.
FAULT = "oom@2:b1-fault"
FIXED_NOW = dt.datetime(2026, 12, 7, 9, 0, 0, tzinfo=dt.timezone.utc)

#: Values that differ between two runs of the same code: masked, their reasons kept.
VOLATILE = {
    "report_run",  # the memo's stamp hashes the Attempts sheet, durations included
    "load_s",
    "warmup_s",
    "measured_s",
    "device_s",
    "forward_device_s",
    "evaluation_s",
    "export_s",
    "host_rss_peak_bytes",
    "mem_allocated_peak_bytes",
    "mem_reserved_peak_bytes",
    "elapsed_s",
    "pid",
    "run",  # the run's id in NAME.runs.jsonl: drawn at random by each run
    "row_sha256",
    "manifest_id",
    "ttft_s",
    "decode_tokens_per_s",
    "bandwidth_ceiling_tokens_per_s",
    "decode_ceiling_fraction",
    "workbook",
    "observed_host_rss_bytes",
    "at",
    "code_version",
    # The host's processor name and installed packages: the machine's, not the runner's.
    "cpu",
    "packages",
    # The peak probe's figures and what is read against them.
    "peak_probe",
    "memory_bandwidth_bytes_s",
    # Other processes' CPU time during the window: the host's load, not the runner's.
    "others_cpu_s",
    "others_cpu_share",
    # The peak probed beside each attempt: its cost and the load it saw.
    "probe_s",
    "probe_others_share",
    # The cold pass is a duration like the window's.
    "cold_pass_s",
    # The Decision memo's draft names the fastest variant: a matter of timing.
    "chosen_configuration",
    "load_handled",
    "draft",
}
#: Filled, or empty with their reason, by the host's load: other processes taking over a
#: quarter of the machine during the probe or the window empty them. Masked even when empty.
BY_LOAD = {"utilisation", "utilisation_reason", "limited_by", "limited_by_reason"}
#: Sentences present or not by the host's load: a window taken under load (Summary notes,
#: the memo's uncertainty) and a window that outran the campaign's peak (an attempt's notes).
LOAD_SENTENCES = tuple(
    re.compile(f"; {body}|{body}(; )?")
    for body in (
        r"UNDER LOAD: .*?rerun on a quiet machine to compare",
        r"[\w-]+'s times rest on \d+ of \d+ window\(s\) taken under load .*?stretched by it",
        r"(utilisation against a re-probed peak: |the window's real-token rate ).*?"
        r"(the Manifest keeps the campaign's probe|the first peak kept)",
    )
)
#: A decimal number inside a text (a duration or a rate in a note or a report cell).
DECIMAL = re.compile(r"\d+\.\d+(e[-+]?\d+)?|\b\d{1,3}(,\d{3})+\b")


@contextmanager
def fixed_clock() -> Iterator[None]:
    """``now_text`` at :data:`FIXED_NOW` and the run's tag ``0000``, wherever they are read."""
    from toolkit.plumbing import clock

    fake = SimpleNamespace(
        datetime=SimpleNamespace(now=lambda tz=None: FIXED_NOW), timezone=dt.timezone
    )
    with (
        mock.patch.object(clock, "dt", fake),
        mock.patch("toolkit.runner.plan.run_tag", lambda: "0000"),
    ):
        yield


def normalise(value: Any, key: str = "") -> Any:
    """``value`` with what varies between runs masked (see :data:`VOLATILE`)."""
    if isinstance(value, dict):
        return {k: normalise(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, key) for v in value]
    if key in BY_LOAD:
        return "<by load>"
    if value is None or isinstance(value, bool):
        return value
    if (
        key in VOLATILE
        or key.endswith(("_flops", "_per_s", "_rate", "_gbps"))
        or isinstance(value, float)
    ):
        return "<varies>"
    if isinstance(value, str):
        for sentence in LOAD_SENTENCES:
            value = sentence.sub("", value)
        value = re.sub(r"m-[0-9a-f]{12}", "m-<id>", value)
        return DECIMAL.sub("<n>", value)
    return value


def _campaign(book: Path, *args: str) -> Any:
    """Run ``book`` in this process; its journal records and workbook cells, normalised."""
    from click.testing import CliRunner

    from toolkit.cli import cli
    from toolkit.workbook import store

    result = CliRunner().invoke(cli, ["run", str(book), *args])
    journal = book.with_suffix(".journal.jsonl")
    records = [json.loads(line) for line in journal.read_text(encoding="utf-8").splitlines()]
    data = store.read(book)
    cells = {name: rows for name, rows in data.tables.items() if rows}
    cells["forms"] = {name: dict(form) for name, form in data.forms.items()}
    found = normalise({"exit_code": result.exit_code, "journal": records, "cells": cells})
    return json.loads(json.dumps(found).replace(str(book.parent), "<folder>"))


def capture(folder: Path) -> dict[str, Any]:
    """Both campaigns' records and cells under the fixed clock, normalised."""
    classify = make_campaign(
        folder / "classification",
        12,
        [
            variant("b1-fp32", 4),
            variant(
                "b2-sorted",
                2,
                series=2,
                padding="max_length",
                max_length=64,
                length_grouping="sorted",
            ),
            variant("b1-fault", 1, series=2),
            variant("b4-missing", 4, series=2, model_path="no_such_model"),
        ],
    )
    generate = make_generation_campaign(
        folder / "generation",
        4,
        [
            gen_variant("b4-fp32", 4),
            gen_variant("b2-sorted", 2, series=2, length_grouping="sorted"),
            gen_variant("b1-fault", 1, series=2),
        ],
    )
    # The pre-flight (`iteralab check`) would refuse the missing model before any attempt;
    # the golden run guards the attempts' own records, a failed load among them.
    with (
        fixed_clock(),
        mock.patch.dict("os.environ", {"ITERALAB_INJECT_FAULT": FAULT}),
        without_preflight(),
    ):
        return {"classification": _campaign(classify), "generation": _campaign(generate)}


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        FIXTURE.write_text(
            json.dumps(capture(Path(tmp)), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
    print(f"wrote {FIXTURE}")
