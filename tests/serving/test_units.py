"""The serving benchmark's parts that need no server: the SSE parser, the arrival schedule,
the percentile rule, the targets, and the figures of a requests file written by hand."""

from __future__ import annotations

import dataclasses
import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from toolkit import serving
from toolkit.errors import ToolkitError, UsageError
from toolkit.serving.metrics import percentile
from toolkit.serving.records import Record, RecordWriter, read_records
from toolkit.serving.schedule import Arrivals, poisson_offsets
from toolkit.serving.sse import EventParser

# ------------------------------------------------------------------ the SSE parser


def test_events_cut_anywhere_come_out_whole_and_in_order() -> None:
    stream = 'data: {"a": 1}\n\n: keep-alive\n\ndata: {"b": 2}\r\n\r\ndata: [DONE]\n\n'
    for cut in range(1, len(stream)):
        parser = EventParser()
        events = parser.feed(stream[:cut]) + parser.feed(stream[cut:]) + parser.close()
        assert events == ['{"a": 1}', '{"b": 2}', "[DONE]"], cut


def test_multi_line_data_is_joined_by_newlines_and_other_fields_are_set_aside() -> None:
    parser = EventParser()
    events = parser.feed("event: delta\nid: 7\ndata: one\ndata:two\nretry: 10\n\n")
    assert events == ["one\ntwo"]


def test_a_lone_cr_ends_a_line_once_the_next_piece_shows_it_is_no_crlf() -> None:
    parser = EventParser()
    assert parser.feed("data: x\r") == []
    assert parser.feed("\rdata: y\r\r") == ["x"]
    assert parser.close() == ["y"]


def test_an_event_the_stream_ends_without_its_blank_line_is_still_given() -> None:
    parser = EventParser()
    assert parser.feed("data: last") == []
    assert parser.close() == ["last"]
    assert parser.close() == []


# ------------------------------------------------------------------ the schedule


def test_poisson_arrivals_are_the_same_for_the_same_seed_and_differ_for_another() -> None:
    first = poisson_offsets(Arrivals(rate=5, requests=50, seed=3))
    assert first == poisson_offsets(Arrivals(rate=5, requests=50, seed=3))
    assert first != poisson_offsets(Arrivals(rate=5, requests=50, seed=4))
    assert len(first) == 50 and first[0] == 0.0
    assert all(b > a for a, b in pairwise(first))


def test_poisson_arrivals_keep_the_declared_rate_over_many_requests() -> None:
    offsets = poisson_offsets(Arrivals(rate=4, requests=20_000, seed=0))
    assert (len(offsets) - 1) / offsets[-1] == pytest.approx(4, rel=0.03)


def test_a_duration_plans_only_arrivals_before_its_end() -> None:
    offsets = poisson_offsets(Arrivals(rate=10, duration_s=3, seed=1))
    assert offsets[-1] < 3
    longer = poisson_offsets(Arrivals(rate=10, duration_s=30, seed=1))
    assert longer[: len(offsets)] == offsets and longer[len(offsets)] >= 3


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"requests": 5}, "either a request rate or a fixed concurrency"),
        ({"rate": 1, "concurrency": 2, "requests": 5}, "either a request rate"),
        ({"rate": 1}, "either a request count or a duration"),
        ({"rate": 0, "requests": 5}, "rate must be above 0"),
        ({"concurrency": 0, "requests": 5}, "concurrency must be at least 1"),
        ({"rate": 1, "requests": 0}, "request count must be 1 to 100000"),
        ({"rate": 1, "duration_s": -1}, "duration must be above 0"),
        ({"rate": 1, "requests": 3, "warmup": -1}, "warm-up count must be 0 or more"),
    ],
)
def test_a_wrong_declaration_is_refused_in_words(declared: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        Arrivals(**declared)  # type: ignore[arg-type]


def test_a_rate_and_duration_planning_too_many_requests_is_refused() -> None:
    with pytest.raises(UsageError, match="plans more than 100000 requests"):
        poisson_offsets(Arrivals(rate=1000, duration_s=3600))


# ------------------------------------------------------------------ percentiles and targets


@pytest.mark.parametrize("p", [0, 1, 50, 90, 99, 99.9, 100])
@pytest.mark.parametrize("n", [1, 2, 5, 101])
def test_the_percentile_is_numpys_linear_rule(p: float, n: int) -> None:
    values = [float(v) for v in np.random.default_rng(n).exponential(100, n)]
    assert percentile(values, p) == pytest.approx(float(np.percentile(values, p)), abs=1e-9)


def test_a_percentile_of_nothing_is_an_error_not_zero() -> None:
    with pytest.raises(ValueError, match="no value"):
        percentile([], 50)


def test_a_target_is_read_from_its_command_line_form() -> None:
    target = serving.parse_target("ttft_p99_ms=500")
    assert (target.metric, target.percentile, target.limit_ms) == ("ttft", 99.0, 500.0)
    assert target.name == "ttft_p99_ms"
    assert serving.parse_target("e2e_p99.9_ms=2000").name == "e2e_p99.9_ms"


@pytest.mark.parametrize(
    "text", ["ttft_p99=500", "speed_p99_ms=5", "ttft_p99_ms=", "ttft_p99_ms=-1", "tpot_p99_ms=inf"]
)
def test_a_malformed_target_is_refused_with_the_form_expected(text: str) -> None:
    with pytest.raises(UsageError, match="is not METRIC_pNN_ms=LIMIT"):
        serving.parse_target(text)


def test_a_base_url_loses_its_trailing_v1_and_a_url_without_scheme_is_refused() -> None:
    assert serving.base_url("http://127.0.0.1:8000/v1/") == "http://127.0.0.1:8000"
    assert serving.base_url("https://host/proxy") == "https://host/proxy"
    with pytest.raises(UsageError, match="not an http"):
        serving.base_url("127.0.0.1:8000")


# ------------------------------------------------------------------ figures from a written file


def _done(index: int, sent: float, tokens: list[float], end: float) -> Record:
    return Record(
        index=index,
        phase="measured",
        prompt_id=f"p{index}",
        scheduled_s=sent - 0.001,
        sent_s=sent,
        first_token_s=tokens[0],
        token_s=tokens,
        end_s=end,
        ok=True,
        http_status=200,
        output_tokens=len(tokens),
        output_tokens_from="usage",
    )


def _write(path: Path, records: list[Record]) -> Path:
    with RecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return path


@pytest.fixture
def written(tmp_path: Path) -> Path:
    """Three completed requests, one failed, one warm-up: every figure known by hand."""
    warm = dataclasses.replace(_done(-1, 0.0, [0.5], 0.6), phase="warmup")
    failed = Record(
        index=3,
        phase="measured",
        prompt_id="p3",
        scheduled_s=1.5,
        sent_s=1.52,
        end_s=1.6,
        reason="HTTP 400 from /v1/completions: no such model",
        http_status=400,
    )
    return _write(
        tmp_path / "requests.jsonl",
        [
            warm,
            _done(0, 0.0, [0.1, 0.2, 0.3], 0.3),  # TTFT 100, TPOT 100, gaps 100 100
            _done(1, 1.0, [1.3, 1.35], 1.4),  # TTFT 300, TPOT 50, gap 50
            _done(2, 2.0, [2.2], 4.0),  # TTFT 200, one token: no TPOT; the window's end
            failed,
        ],
    )


def test_the_figures_of_a_file_are_the_ones_computed_by_hand(written: Path) -> None:
    targets = [serving.parse_target("ttft_p99_ms=250"), serving.parse_target("tpot_p99_ms=80")]
    m = serving.compute(written, targets, lag_limit_ms=10)
    assert (m.requests_sent, m.requests_completed, m.requests_failed) == (4, 3, 1)
    assert m.warmup_requests == 1
    assert m.window_s == pytest.approx(4.0)
    assert m.ttft_p50_ms == pytest.approx(200)
    assert m.ttft_p99_ms == pytest.approx(200 + 0.98 * 100)
    assert m.tpot_p50_ms == pytest.approx(75)
    assert m.itl_p99_ms == pytest.approx(100)
    assert m.output_tokens == 6 and m.output_tokens_from == "usage"
    assert m.output_tokens_per_s == pytest.approx(6 / 4.0)
    # Request 0 is over the TPOT limit, request 1 over the TTFT limit; request 2 (one token,
    # no TPOT) meets both; the failed request meets nothing.
    assert m.good_requests == 1
    assert m.goodput_rps == pytest.approx(1 / 4.0)
    assert m.targets["ttft_p99_ms"]["met"] is False
    assert m.failures == {"HTTP 400 from /v1/completions": 1}
    assert m.client_lag_p99_ms == pytest.approx(20 * 0.97 + 1 * 0.03, abs=1e-6)
    assert m.client_lagged is True
    assert "p99 19.4 ms over the 10 ms allowed" in m.reasons["client_lagged"]


def test_a_file_with_no_completed_request_has_no_figures_but_reasons(tmp_path: Path) -> None:
    failed = Record(
        index=0,
        phase="measured",
        prompt_id="p0",
        scheduled_s=0,
        sent_s=0.0,
        end_s=0.5,
        reason="endpoint unreachable: http://127.0.0.1:9 (refused)",
    )
    m = serving.compute(_write(tmp_path / "requests.jsonl", [failed]))
    assert m.ttft_p50_ms is None and m.output_tokens_per_s is None and m.goodput_rps is None
    assert m.reasons["ttft_p50_ms"] == "no measured request completed"
    assert m.reasons["goodput_rps"] == "no measured request completed"
    assert m.failure_examples == {"endpoint unreachable": failed.reason}


def test_records_read_back_equal_the_records_written(written: Path) -> None:
    records = read_records(written)
    assert [r.index for r in records] == [-1, 0, 1, 2, 3]
    assert records[2] == _done(1, 1.0, [1.3, 1.35], 1.4)


def test_a_line_that_is_no_record_is_named_with_its_file_and_line(written: Path) -> None:
    with written.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps({"index": 9}) + "\n")
    with pytest.raises(ToolkitError, match=r"requests.jsonl, line 6: not a request record"):
        read_records(written)


def test_a_requests_file_written_before_header_times_reads_with_none(
    written: Path, tmp_path: Path
) -> None:
    older = tmp_path / "older.jsonl"
    lines = [json.loads(line) for line in written.read_text(encoding="utf-8").splitlines()]
    for line in lines:
        del line["headers_s"]
    older.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    records = read_records(older)
    assert [r.headers_s for r in records] == [None] * 5
    assert records == read_records(written)


def test_a_requests_file_is_never_overwritten(written: Path) -> None:
    with pytest.raises(UsageError, match="a run already wrote its requests here"):
        RecordWriter(written)


def test_the_public_names_are_the_ones_meant() -> None:
    assert set(serving.__all__) == {
        "Arrivals",
        "Identity",
        "LatencyTarget",
        "LocalServer",
        "Metrics",
        "Record",
        "RunResult",
        "Scenario",
        "base_url",
        "compute",
        "identify",
        "missing_packages",
        "parse_target",
        "percentile",
        "read_records",
        "sweep",
    }
