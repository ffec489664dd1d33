"""The serving benchmark's like-for-like load: a guidellm run is compared with the toolkit only
where guidellm planned its sends at the declared Poisson draws (its per-worker generators and
its start race both plan elsewhere), and the toolkit from its second send on, where the two
plans coincide."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.benchmarks import import_benchmark
from toolkit.serving.records import MEASURED, Record

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


def _done(index: int, phase: str, headers: float | None, first: float | None) -> Record:
    return Record(
        index=index,
        phase=phase,
        prompt_id=f"p{index}",
        scheduled_s=0.0,
        sent_s=0.0,
        headers_s=headers,
        first_token_s=first,
        token_s=[] if first is None else [first],
        end_s=0.05,
        ok=True,
    )


def test_ttft_against_guidellm_starts_at_the_first_header_write(
    serving_bench: ModuleType,
) -> None:
    # 18 ms after its headers went out, 20 from the send
    assert serving_bench.ttft_from_headers_ms(_done(0, MEASURED, 0.002, 0.020)) == pytest.approx(
        18.0
    )
    assert serving_bench.ttft_from_headers_ms(_done(1, MEASURED, None, 0.02)) is None
    assert serving_bench.ttft_from_headers_ms(_done(2, MEASURED, 0.002, None)) is None


def _guidellm_request(planned: float, start: float, first: float | None) -> dict[str, Any]:
    timings = {"targeted_start": planned, "request_start": start, "first_token_iteration": first}
    return {"info": {"timings": timings}}


def test_guidellm_ttfts_follow_its_plan_not_its_report_order(serving_bench: ModuleType) -> None:
    """The report lists requests by completion and by outcome; the pairs need plan order, a
    failed request holding its place as None."""
    benchmark = {
        "requests": {
            "successful": [
                _guidellm_request(START + 2.0, START + 2.001, START + 2.031),  # 30 ms
                _guidellm_request(START + 0.5, START + 0.501, START + 0.521),  # 20 ms
            ],
            "errored": [_guidellm_request(START + 1.0, START + 1.001, None)],
            "incomplete": [],
        }
    }
    found = serving_bench.guidellm_ttfts(benchmark)
    assert found[0] == pytest.approx(20.0) and found[1] is None
    assert found[2] == pytest.approx(30.0)


def _rounds(
    serving_bench: ModuleType, ours: list[list[float | None]], theirs: list[list[float | None]]
) -> dict[str, list[Any]]:
    return {
        "toolkit": [serving_bench.Round({}, found) for found in ours],
        "guidellm": [serving_bench.Round({}, found) for found in theirs],
    }


def test_requests_are_paired_only_where_both_clients_have_a_ttft(
    serving_bench: ModuleType,
) -> None:
    runs = _rounds(serving_bench, [[10.0, None, 12.0], [8.0]], [[11.0, 9.0, None], [7.0]])
    assert serving_bench.ttft_pairs(runs) == [[(10.0, 11.0)], [(8.0, 7.0)]]
    with pytest.raises(SystemExit, match="not the same load"):
        serving_bench.ttft_pairs(_rounds(serving_bench, [[10.0]], [[11.0, 9.0]]))


def _jittered(count: int, scale: float, seed: int) -> list[float | None]:
    """TTFTs of ``count`` requests spread as this server's are (tens of percent)."""
    draw = random.Random(seed)
    return [scale * draw.uniform(15.0, 45.0) for _ in range(count)]


def _sweep(
    serving_bench: ModuleType, rounds: int, count: int, ours: float, drift: float = 0.0
) -> dict[str, list[Any]]:
    """``rounds`` rounds of ``count`` requests, the toolkit ``ours`` times guidellm's; with
    ``drift``, the server alternately that much faster and slower in the toolkit's runs."""
    return _rounds(
        serving_bench,
        [_jittered(count, ours * (1 + drift * (-1) ** k), 2 * k) for k in range(rounds)],
        [_jittered(count, 1.0, 2 * k + 1) for k in range(rounds)],
    )


def test_the_ttft_verdict_needs_its_interval_inside_the_band(serving_bench: ModuleType) -> None:
    """Alike clients over many requests: met. One 20 % later: missed. Few requests: the
    interval is wider than the band, so no verdict either way, whatever the point ratio."""
    alike = _sweep(serving_bench, 8, 500, 1.0)
    ratio, low, high = serving_bench.median_ratio_interval(serving_bench.ttft_pairs(alike))
    assert low <= ratio <= high and 0.95 < low and high < 1.05
    assert serving_bench.ttft_verdict(alike) is True
    later = _sweep(serving_bench, 8, 500, 1.2)
    assert serving_bench.median_ratio_interval(serving_bench.ttft_pairs(later))[1] > 1.05
    assert serving_bench.ttft_verdict(later) is False
    few = _sweep(serving_bench, 2, 20, 1.0)
    _, low, high = serving_bench.median_ratio_interval(serving_bench.ttft_pairs(few))
    assert low < 0.95 or high > 1.05
    assert serving_bench.ttft_verdict(few) is False


def test_too_few_rounds_give_no_verdict_however_many_requests(
    serving_bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """One round resampled is always itself: its interval has no width and proves nothing."""
    one = _sweep(serving_bench, 1, 4000, 1.0)
    _, low, high = serving_bench.median_ratio_interval(serving_bench.ttft_pairs(one))
    assert low == high
    assert serving_bench.ttft_verdict(one) is False
    assert "not resolved: 1 round(s), an interval over rounds needs 5" in capsys.readouterr().out


def test_a_server_that_drifts_between_runs_widens_the_interval(serving_bench: ModuleType) -> None:
    """Many requests, alike clients, but the server 15 % faster or slower from one run to the
    next: the rounds disagree, and the interval says so instead of pooling the drift away."""
    steady = serving_bench.median_ratio_interval(
        serving_bench.ttft_pairs(_sweep(serving_bench, 6, 500, 1.0))
    )
    drifting = serving_bench.median_ratio_interval(
        serving_bench.ttft_pairs(_sweep(serving_bench, 6, 500, 1.0, drift=0.15))
    )
    assert drifting[2] - drifting[1] > 3 * (steady[2] - steady[1])
    assert drifting[1] < 0.95 or drifting[2] > 1.05


def test_the_server_gets_its_own_cores(serving_bench: ModuleType) -> None:
    assert serving_bench.server_cores({0, 1}) == {0}
    assert serving_bench.server_cores({2, 3, 4, 5}) == {2, 3}
    assert serving_bench.server_cores({7}) == {7}


def _refereed_sweep(
    serving_bench: ModuleType, drift: float, ours_ms: float, theirs_ms: float
) -> dict[str, list[Any]]:
    """Six rounds of 300 requests on a server alternately ``drift`` faster and slower in the
    toolkit's runs; each client's TTFT is the wire's plus its own milliseconds."""
    runs: dict[str, list[Any]] = {"toolkit": [], "guidellm": []}
    for k in range(6):
        for who, scale, own in (
            ("toolkit", 1 + drift * (-1) ** k, ours_ms),
            ("guidellm", 1.0, theirs_ms),
        ):
            seen = _jittered(300, scale, 2 * k + (who == "guidellm"))
            ttfts = [t + own if t is not None else None for t in seen]
            runs[who].append(serving_bench.Round({}, ttfts, seen))
    return runs


def test_the_wire_takes_the_servers_drift_out_of_the_verdict(
    serving_bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """The server 15 % faster or slower between the clients' runs: the raw medians' interval
    crosses the band, but over the wire's TTFT of the same requests two clients that add
    the same half millisecond agree, and one that adds 5 ms more is missed."""
    alike = _refereed_sweep(serving_bench, 0.15, 0.5, 0.5)
    _, low, high = serving_bench.median_ratio_interval(serving_bench.ttft_pairs(alike))
    assert low < 0.95 or high > 1.05
    assert serving_bench.ttft_verdict(alike) is True
    out = capsys.readouterr().out
    assert "not judged: it holds the server's drift" in out
    assert "TTFT over the wire's, toolkit: median 1.0" in out and "median +0.50 ms" in out
    assert "TTFT over the wire's: ratio of the medians over 1800 paired requests" in out
    server = [
        statistics.median(t for found in alike[who] for t in found.wire)
        for who in ("toolkit", "guidellm")
    ]
    assert f"{server[0]:.2f} ms in the toolkit's runs, {server[1]:.2f} ms in guidellm's" in out
    slower = _refereed_sweep(serving_bench, 0.15, 5.5, 0.5)
    assert serving_bench.ttft_verdict(slower) is False
    assert capsys.readouterr().out.rstrip().endswith(": missed")


def test_a_round_without_the_wire_is_judged_raw(serving_bench: ModuleType) -> None:
    runs = _refereed_sweep(serving_bench, 0.0, 0.5, 0.5)
    runs["guidellm"][3] = serving_bench.Round({}, runs["guidellm"][3].ttfts)
    with pytest.raises(ValueError, match="no capture ran"):
        serving_bench.ttft_pairs(runs, over_wire=True)
    assert serving_bench.ttft_verdict(runs) is True  # raw, alike and steady: met all the same


def test_the_wire_is_matched_by_prompt_the_last_try_kept(
    serving_bench: ModuleType, tmp_path: Path
) -> None:
    """A guidellm try discarded after a lost start race sent the same prompts first: the
    kept (last) try's exchanges count; a prompt the wire never saw has None."""
    wire = import_benchmark("wire")
    found = serving_bench.Round({}, [10.0, 11.0, 12.0])
    exchanges = [
        wire.Exchange("a", 1.0, 1.5),
        wire.Exchange(None, 1.2, None),
        wire.Exchange("a", 2.0, 2.01),
        wire.Exchange("b", 2.1, 2.112),
    ]
    wired = serving_bench.refereed(found, exchanges, ["a", "b", "c"])
    assert wired.ttfts == found.ttfts
    assert wired.wire == [pytest.approx(10.0), pytest.approx(12.0), None]
    assert serving_bench.over_the_wire(wired) == [pytest.approx(1.0), pytest.approx(11 / 12), None]
