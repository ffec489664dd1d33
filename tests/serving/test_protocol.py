"""A serving Protocol declares its scenario in the workbook: validate and lock name each wrong
field or request_rate, the runner reads the same declaration, and series 1 is a rate sweep."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import openpyxl
import pytest

from tests.support.builders import SERVING_PROTOCOL, make_serving_campaign, serving_variant
from toolkit import layout
from toolkit.commands.documents import attempt_document
from toolkit.commands.serving import serve_bench
from toolkit.errors import ProtocolError, UsageError
from toolkit.evidence import locking, protocol, scenario
from toolkit.evidence.validate import validate
from toolkit.report import serving as report_serving
from toolkit.runner import decoding
from toolkit.workbook import store, text_sheets
from toolkit.workbook.model import WorkbookData


def _book(protocol: dict[str, Any] | None = None, *rows: dict[str, object]) -> WorkbookData:
    data = WorkbookData.empty()
    data.forms["Protocol"].update({**SERVING_PROTOCOL, **(protocol or {})})
    for row in rows or (serving_variant("r1", 1), serving_variant("r2", 2)):
        data.append("Variants", row)
    return data


def _serving(data: WorkbookData) -> list[tuple[str, int | None, str, str]]:
    return [
        (f.sheet, f.row, f.column, f.message)
        for f in validate(data)
        if f.check in ("serving", "series-1", "engine")
    ]


def test_a_complete_serving_protocol_and_its_rate_sweep_validate_clean() -> None:
    assert _serving(_book()) == []


def test_the_scenario_reads_as_declared() -> None:
    read = scenario.read_scenario(SERVING_PROTOCOL)
    assert read == scenario.Scenario(
        arrival="poisson",
        max_new_tokens=8,
        requests=6,
        duration_s=None,
        warmup=1,
        targets=(
            scenario.LatencyTarget("ttft", 99.0, 5000.0),
            scenario.LatencyTarget("tpot", 99.0, 2000.0),
        ),
        agreement="token",
    )
    assert read.text() == (
        "poisson arrivals to /v1/completions, 6 requests after 1 warm-up, "
        "max_new_tokens 8, "
        "targets ttft_p99_ms<=5000; tpot_p99_ms<=2000"
    )


def test_the_api_field_names_the_route_and_blank_is_completions() -> None:
    chat = scenario.read_scenario({**SERVING_PROTOCOL, "api": "chat"})
    assert (chat.api, chat.route) == ("chat", "/v1/chat/completions")
    assert chat.text().startswith("poisson arrivals to /v1/chat/completions, 6 requests")
    blank = scenario.read_scenario({**SERVING_PROTOCOL, "api": None})
    assert (blank.api, blank.route) == ("completions", "/v1/completions")


def _as_layout_10(book: Path) -> None:
    """Rewrite ``book`` as layout 10 wrote it: no api row in the Protocol."""
    wb = openpyxl.load_workbook(book)
    form = wb["Protocol"]
    (row,) = [cell.row for cell in form["A"] if cell.value == "api"]
    form.delete_rows(row)
    wb["Guide"]["A2"] = "layout_version: 10"
    del wb.defined_names[text_sheets.NAME]  # the Guide's seal holds layout 11's text
    wb.save(book)


def test_a_layout_10_serving_workbook_reads_its_route_as_completions(tmp_path: Path) -> None:
    """A serving campaign locked before the api field existed sends to /v1/completions, as
    it did; saved in the current layout, its lock still verifies."""
    book = make_serving_campaign(tmp_path, 3, [serving_variant("r1", 1)])
    _as_layout_10(book)
    older = store.read(book)
    assert older.layout_version == 10 and older.forms["Protocol"]["api"] is None
    assert scenario.read_scenario(older.forms["Protocol"]).route == "/v1/completions"
    assert protocol.lock_findings(older) == [] and _serving(older) == []
    store.save(older, book)
    current = store.read(book)
    assert current.layout_version == layout.LAYOUT_VERSION == 11
    assert protocol.require_lock(current, book) == protocol.require_lock(older, book)
    assert protocol.lock_findings(current) == []


def test_the_report_states_a_serving_load_in_words_and_nothing_for_another_task() -> None:
    assert report_serving.scenario_text({**SERVING_PROTOCOL, "api": "chat"}) == (
        "poisson arrivals to /v1/chat/completions, 6 requests after 1 warm-up, "
        "max_new_tokens 8, targets ttft_p99_ms<=5000; tpot_p99_ms<=2000"
    )
    assert report_serving.scenario_text({**SERVING_PROTOCOL, "api": "embeddings"}) == (
        "not readable: Protocol field api: 'embeddings' is no route"
    )
    assert report_serving.scenario_text({"task": "generation"}) is None


def test_the_protocol_and_serve_bench_share_one_route_vocabulary() -> None:
    """The Protocol's api choices, the routes the client sends to and serve-bench's --api
    are the same words."""
    api = next(p for p in serve_bench.params if p.name == "api")
    assert isinstance(api.type, click.Choice)
    assert tuple(api.type.choices) == tuple(scenario.ROUTES) == ("completions", "chat")
    assert layout.PROTOCOL.column("api").choices == tuple(scenario.ROUTES)
    assert layout.PROTOCOL.column("api").since == 11


def test_targets_take_the_protocol_and_the_command_line_spelling() -> None:
    assert scenario.parse_targets(" ttft_p50_ms=200 ;e2e_p90_ms<=1500; ") == (
        scenario.LatencyTarget("ttft", 50.0, 200.0),
        scenario.LatencyTarget("e2e", 90.0, 1500.0),
    )
    assert scenario.parse_targets("") == ()
    with pytest.raises(UsageError, match="target ttft_p99_ms is declared twice"):
        scenario.parse_targets("ttft_p99_ms<=1; ttft_p99_ms<=2")


@pytest.mark.parametrize(
    ("fields", "row", "column", "message"),
    [
        (
            {"arrival": "burst"},
            29,
            "arrival",
            "'burst' is no arrival: write poisson or concurrency",
        ),
        (
            {"request_duration_s": 60},
            30,
            "request_count",
            "declare how many requests each attempt sends, or for how long: fill "
            "request_count (e.g. 100) or request_duration_s (e.g. 60), not both",
        ),
        (
            {"request_count": None, "request_duration_s": -1},
            31,
            "request_duration_s",
            "-1 is no duration: write seconds above 0",
        ),
        (
            {"warmup_requests": 1.5},
            32,
            "warmup_requests",
            "1.5 is no request count: write a whole number >= 0 (blank is 0)",
        ),
        (
            {"latency_targets": "ttft_p99_ms<=500; speed<=3"},
            33,
            "latency_targets",
            "target 'speed<=3' is not METRIC_pNN_ms=LIMIT: METRIC is one of ttft, tpot, itl, "
            "e2e; e.g. ttft_p99_ms=500 or tpot_p99_ms=50 (a limit in milliseconds above 0; "
            "the Protocol may write <=)",
        ),
        (
            {"api": "responses"},
            35,
            "api",
            "'responses' is no route: write completions (/v1/completions), chat "
            "(/v1/chat/completions); blank is completions",
        ),
        (
            {"max_new_tokens": None},
            26,
            "max_new_tokens",
            "None is no token count: write the most tokens a request may generate, a whole "
            "number >= 1",
        ),
    ],
)
def test_each_wrong_serving_field_is_a_finding_naming_its_row(
    fields: dict[str, Any], row: int, column: str, message: str
) -> None:
    assert (
        "Protocol",
        row,
        column,
        message,
    ) in _serving(_book(fields))


def test_a_request_rate_the_arrival_cannot_read_is_named_by_variant() -> None:
    rows = (serving_variant("r1", 1), serving_variant("r2", 2, request_rate=None))
    assert _serving(_book({}, *rows)) == [
        (
            "Variants",
            3,
            "request_rate",
            "r2: request_rate is None: it is the requests per second sent to the endpoint "
            "(Poisson arrivals), above 0",
        )
    ]
    whole = (serving_variant("r1", 1), serving_variant("r2", 2.5))
    assert _serving(_book({"arrival": "concurrency"}, *whole)) == [
        (
            "Variants",
            3,
            "request_rate",
            "r2: request_rate is 2.5: under Protocol arrival concurrency it is the requests "
            "kept in flight, a whole number >= 1",
        )
    ]


def test_series_1_of_a_serving_campaign_varies_the_rate_only() -> None:
    rows = (serving_variant("r1", 1), serving_variant("r2", 2, batch_size=4))
    assert _serving(_book({}, *rows)) == [
        (
            "Variants",
            3,
            "batch_size",
            "series 1 varies request_rate only: r2 has batch_size 4 where series 1 has 1; set "
            "1, or move r2 to a later series that names its base_variant and changes",
        )
    ]


def test_a_serving_variant_names_the_openai_http_engine() -> None:
    found = _serving(_book({}, serving_variant("r1", 1, engine=None)))
    assert found == [
        (
            "Variants",
            2,
            "engine",
            "r1: engine torch does not run the serving task: torch runs classification, "
            "generation; use openai-http for serving",
        )
    ]


def test_lock_refuses_a_wrong_serving_field_and_the_runner_reads_the_same() -> None:
    with pytest.raises(ProtocolError, match="Protocol!29 arrival: 'burst' is no arrival"):
        locking.lock(_book({"arrival": "burst"}))
    with pytest.raises(ProtocolError, match="Protocol field arrival: 'burst' is no arrival"):
        decoding.check_protocol({**SERVING_PROTOCOL, "arrival": "burst"})
    decoding.check_protocol(SERVING_PROTOCOL)


def test_the_run_announces_requests_arrival_rates_and_route() -> None:
    rates = [serving_variant("r4", 4), serving_variant("r1", 1), serving_variant("r1b", 1)]
    assert scenario.load_text(SERVING_PROTOCOL, rates) == (
        "6 requests each after 1 warm-up (Poisson arrivals at 1, 4 requests/s to /v1/completions)"
    )
    declared = {
        **SERVING_PROTOCOL,
        "arrival": "concurrency",
        "request_count": None,
        "request_duration_s": 30,
        "warmup_requests": None,
        "api": "chat",
    }
    assert scenario.load_text(declared, [serving_variant("c2", 2)]) == (
        "30 s of requests each after 0 warm-up (2 requests in flight to /v1/chat/completions)"
    )


def test_the_load_of_a_variant_is_a_rate_or_a_whole_concurrency() -> None:
    assert scenario.load_of({"request_rate": 2.5}, "poisson") == 2.5
    assert scenario.load_of({"request_rate": 4.0}, "concurrency") == 4
    with pytest.raises(ProtocolError, match="Variants r9: request_rate is 0"):
        scenario.load_of({"variant_id": "r9", "request_rate": 0}, "poisson")


def test_a_serving_attempt_document_carries_the_serving_columns_and_reasons() -> None:
    row = {"attempt_id": "a1", "requests_sent": 6, "ttft_p99_ms": None}
    row["ttft_p99_ms_reason"] = "no measured request completed"
    document = attempt_document({"attempt": row}, decoding.SERVING_COLUMNS)
    keys = list(document)
    assert keys[keys.index("requests_sent") : keys.index("requests_sent") + 2] == [
        "requests_sent",
        "requests_sent_reason",
    ]
    assert document["requests_sent"] == 6
    assert document["ttft_p99_ms_reason"] == "no measured request completed"
    assert keys[-1] == "notes"
    assert len(keys) == 1 + 13 + 2 * len(decoding.SERVING_COLUMNS) + 1
