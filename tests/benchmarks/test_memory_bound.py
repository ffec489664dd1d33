"""benchmarks/memory_bound.py runs end to end at its --quick sizes and prints its bounds.

Like the other benchmark smoke tests, this proves the script works; the peaks
are the machine's. What does not depend on the machine is asserted exactly:
each bound is printed as a ratio to its stated limit, the synthetic campaign
validates without a finding, and a corpus line one byte over the limit is
refused with the reader's message. The quick sizes are far from the limits,
so their ratios are well under 1 on any machine that runs the test suite.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.paths import BENCHMARKS, ROOT

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SCRIPT = BENCHMARKS / "memory_bound.py"
RATIO_LINE = re.compile(r"^ratio (\d+\.\d{3}) \(target <= 1\): (met|missed)$", re.MULTILINE)


def test_quick_prints_each_bound_as_a_ratio_and_sees_the_refusal() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out, lines = done.stdout, done.stdout.splitlines()

    ratios = RATIO_LINE.findall(out)
    assert len(ratios) == 3, out  # validate, run, refusal
    assert all(float(value) <= 1 and verdict == "met" for value, verdict in ratios), out
    # Each ratio line follows the line that says what it measured, against which limit.
    for label in (
        "validate and report (the larger, each with its helper processes) at the largest "
        "accepted workbook",
        "run on the largest accepted line",
        "lines over the limit: all refused",
    ):
        at = next(i for i, line in enumerate(lines) if line.startswith(label))
        assert "of the stated " in lines[at] and RATIO_LINE.match(lines[at + 1]), lines[at]

    for attempts in ("200", "800"):
        assert re.search(
            rf"^validate +{attempts} attempts: largest part xl/worksheets/"
            r"sheet\d+\.xml .* peak [\d,]+ MiB .* 0 findings$",
            out,
            re.MULTILINE,
        )
        assert re.search(
            rf"^report +{attempts} attempts \(saving, PNG charts\): peak [\d,]+ MiB \+ helpers "
            r"[\d,]+ MiB; .* 0 findings$",
            out,
            re.MULTILINE,
        )
        tree = re.search(
            rf"^peak of the process tree, sampled every 10 ms / bare openpyxl load \([\d,]+ "
            rf"MiB, .*\) at {attempts} attempts: validate ([\d.]+) \([\d,]+ MiB\), report "
            r"([\d.]+) \([\d,]+ MiB\) \(target <= 1.5, shown\); the bound, own peak plus the "
            r"helpers' peaks: validate ([\d.]+), report ([\d.]+)$",
            out,
            re.MULTILINE,
        )
        assert tree, out
        # At one moment the tree holds no more than each of its processes at its own peak.
        assert float(tree[1]) <= float(tree[3]) + 0.01
        assert float(tree[2]) <= float(tree[4]) + 0.01
    assert re.search(r"^peak per MiB of the Attempts part: [\d.]+ MiB", out, re.MULTILINE)
    assert re.search(
        r"^extrapolated peak at the part limit \([\d,]+ attempts\): [\d.]+ GiB "
        r"\(extrapolated, not measured\)$",
        out,
        re.MULTILINE,
    )

    assert re.search(
        r"^read \+ fingerprint \+ tokenize, 25 lines \(longest: one of 65,536 "
        r"bytes; longest [\d,]+ tokens\): peak [\d,]+ MiB",
        out,
        re.MULTILINE,
    )
    refusal = next(line for line in lines if line.startswith("a line of 1,048,577 bytes: "))
    assert refusal.startswith("a line of 1,048,577 bytes: refused (")
    assert (
        "over.jsonl: line 25 holds 1,048,577 bytes, over the 1,048,576-byte limit of one "
        "input); peak " in refusal
    )
    assert "iteralab run: skipped in --quick (the tokenize figure above stands for it)" in lines
    assert re.search(
        r"^results row: \| \d{4}-\d\d-\d\d \| .* \| `memory_bound\.py --quick` "
        r"\(.*\) \| \d\.\d{3} \| <= 1 \| met \|$",
        out,
        re.MULTILINE,
    )
