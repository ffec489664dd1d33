"""The serving benchmark's like-for-like load: a guidellm run is compared with the toolkit only
where guidellm planned its sends at the declared Poisson draws (its per-worker generators and
its start race both plan elsewhere), and the toolkit from its second send on, where the two
plans coincide."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.benchmarks import import_benchmark
from toolkit.serving.records import MEASURED, WARMUP, Record

START = 1_796_507_467.0  # guidellm's scheduler start, a Unix time
RATE, SEED, REQUESTS = 2.0, 0, 20


@pytest.fixture(scope="module")
def serving_bench() -> ModuleType:
    return import_benchmark("serving")


def _report(planned: list[float], failed: int = 0) -> dict[str, Any]:
    """A benchmark of guidellm's JSON report, as far as the check reads it: every request's
    scheduler start and planned send time (``targeted_start``), the last ``failed`` errored,
    and one request cancelled before its turn (no planned time)."""
    requests = [
        {"info": {"scheduler_start_time": START, "timings": {"targeted_start": START + at}}}
        for at in planned
    ]
    cut = len(requests) - failed
    cancelled = {"info": {"scheduler_start_time": START, "timings": {"targeted_start": None}}}
    return {
        "requests": {
            "successful": requests[:cut],
            "errored": requests[cut:],
            "incomplete": [cancelled],
        }
    }


def _draws(seed: int, count: int) -> list[float]:
    draw = random.Random(seed)
    return [draw.expovariate(RATE) for _ in range(count)]


def _summed(gaps: list[float], origin: float = 0.0) -> list[float]:
    planned, at = [], origin
    for gap in gaps:
        at += gap
        planned.append(at)
    return planned


def test_a_plan_at_the_declared_draws_passes_in_any_order_and_with_failed_requests(
    serving_bench: ModuleType,
) -> None:
    planned = _summed(_draws(SEED, REQUESTS))  # the first send one gap after the start
    assert serving_bench.guidellm_plan_error(_report(planned), RATE, SEED) is None
    shuffled = planned[10:] + planned[:10]  # the report lists requests by completion
    assert serving_bench.guidellm_plan_error(_report(shuffled, failed=3), RATE, SEED) is None


def test_ten_workers_repeating_each_gap_is_named(serving_bench: ModuleType) -> None:
    """guidellm's default: ten worker processes, each with a generator seeded alike."""
    repeated = [gap for gap in _draws(SEED, 2) for _ in range(10)]
    found = serving_bench.guidellm_plan_error(_report(_summed(repeated)), RATE, SEED)
    assert found is not None
    assert found.startswith("request 2 of 20 was planned")


def test_a_plan_that_lost_the_start_race_is_named(serving_bench: ModuleType) -> None:
    """The first arrival read before the start was set: every send planned in the past."""
    raced = _summed(_draws(SEED, REQUESTS), origin=-1.0 - START)
    found = serving_bench.guidellm_plan_error(_report(raced), RATE, SEED)
    assert found is not None and "s after its start, the declared draws put it at" in found


def test_another_seed_is_not_the_declared_plan(serving_bench: ModuleType) -> None:
    planned = _summed(_draws(SEED + 1, REQUESTS))
    assert serving_bench.guidellm_plan_error(_report(planned), RATE, SEED) is not None


def test_a_report_without_requests_is_named(serving_bench: ModuleType) -> None:
    found = serving_bench.guidellm_plan_error(_report([]), RATE, SEED)
    assert found == "it recorded no request"


def test_the_toolkit_is_compared_from_its_second_send(
    serving_bench: ModuleType, tmp_path: Path
) -> None:
    """Its first measured request leaves before the first draw, where guidellm sends none; a
    warm-up request of the same index stays (the toolkit's figures leave it out themselves)."""
    lines = [
        {"index": 0, "phase": "warmup", "sent_s": 0.0},
        {"index": 0, "phase": "measured", "sent_s": 0.0},
        {"index": 1, "phase": "measured", "sent_s": 0.93},
        {"index": 2, "phase": "measured", "sent_s": 1.64},
    ]
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    kept = serving_bench.from_second_send(requests)
    assert kept.parent == tmp_path and kept != requests
    found = [json.loads(line) for line in kept.read_text(encoding="utf-8").splitlines()]
    assert found == [lines[0], lines[2], lines[3]]
    assert len(requests.read_text(encoding="utf-8").splitlines()) == 4  # the original stays


def test_ttft_against_guidellm_starts_at_the_first_header_write(
    serving_bench: ModuleType,
) -> None:
    def done(index: int, phase: str, headers: float | None, first: float) -> Record:
        return Record(
            index=index,
            phase=phase,
            prompt_id=f"p{index}",
            scheduled_s=0.0,
            sent_s=0.0,
            headers_s=headers,
            first_token_s=first,
            token_s=[first],
            end_s=first + 0.01,
            ok=True,
        )

    records = [
        done(0, MEASURED, 0.002, 0.020),  # 18 ms after its headers went out (20 from the send)
        done(1, MEASURED, 0.003, 0.013),  # 10 ms
        done(2, MEASURED, 0.001, 0.031),  # 30 ms
        done(3, WARMUP, 0.0, 9.0),  # a warm-up request is not measured
        done(4, MEASURED, None, 9.0),  # no header write recorded: left out
    ]
    assert serving_bench.ttft_from_headers_ms(records) == pytest.approx(18.0)
    with pytest.raises(SystemExit, match="no header write time"):
        serving_bench.ttft_from_headers_ms(records[3:])
