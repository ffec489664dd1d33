"""The serving benchmark against a real ``transformers serve`` on 127.0.0.1, with the sample
causal LM on the CPU: every request recorded, the figures recomputed from the file agree,
goodput counts only requests meeting every target, and a server killed mid-run, a wrong
model name or an unreachable port give failed records with their reason."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from tests.support.paths import SAMPLES
from toolkit import serving
from toolkit.cli import cli
from toolkit.serving.local import free_port
from toolkit.serving.schedule import poisson_offsets

pytestmark = pytest.mark.campaign  # starts a server subprocess: not in `make test-fast`

MODEL = SAMPLES / "causal_lm"
PROMPTS = SAMPLES / "prompts.jsonl"

if serving.missing_packages():
    pytest.skip(
        f"the serving extra is not installed ({', '.join(serving.missing_packages())} missing): "
        "pip install '.[serving]'",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[serving.LocalServer]:
    log = tmp_path_factory.mktemp("server") / "transformers-serve.log"
    with serving.LocalServer(MODEL, log) as running:
        yield running


def _scenario(server: serving.LocalServer, **changes: object) -> serving.Scenario:
    declared: dict[str, object] = {
        "prompts": PROMPTS,
        "max_tokens": 8,
        "base_url": server.base_url,
        "model": server.model,
    }
    return serving.Scenario(**{**declared, **changes})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def two_rates(
    server: serving.LocalServer, tmp_path_factory: pytest.TempPathFactory
) -> list[serving.RunResult]:
    """Two rates of six measured requests each, the first after two warm-up requests."""
    out = tmp_path_factory.mktemp("two-rates")
    return serving.sweep(
        _scenario(server),
        [serving.Arrivals(rate=2, requests=6, warmup=2), serving.Arrivals(rate=6, requests=6)],
        out,
    )


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_two_rate_run_records_every_request_with_its_hash(
    two_rates: list[serving.RunResult],
) -> None:
    assert [r.label for r in two_rates] == ["rate-2", "rate-6"]
    first, second = (_lines(r.requests) for r in two_rates)
    assert sorted(int(str(line["index"])) for line in first) == [-2, -1, 0, 1, 2, 3, 4, 5]
    assert sorted(int(str(line["index"])) for line in second) == [0, 1, 2, 3, 4, 5]
    for result in two_rates:
        assert result.metrics.requests_completed == 6, result.metrics.failure_examples
        run = json.loads((result.folder / "run.json").read_text(encoding="utf-8"))
        assert run["requests_sha256"] == result.sha256 == serving_sha(result.requests)
        assert run["identity"]["models"] == [str(MODEL.resolve())]
        assert run["identity"]["server"] == "uvicorn"
    for line in first + second:
        assert line["ok"] is True and line["output_tokens_from"] == "usage"
        assert 1 <= int(str(line["output_tokens"])) <= 8 and line["text"]
        assert line["finish_reason"] in ("length", "stop")


def serving_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_second_run_follows_its_seeded_schedule_whatever_the_server_does(
    two_rates: list[serving.RunResult],
) -> None:
    """Open loop: each request left at its Poisson due time (within the client's lag), even
    while earlier ones were still streaming."""
    planned = serving.Arrivals(rate=6, requests=6)
    records = sorted(serving.read_records(two_rates[1].requests), key=lambda r: r.index)
    assert [r.scheduled_s for r in records] == poisson_offsets(planned)
    assert all(0 <= (r.lag_s or 0) < 0.5 for r in records)


def test_the_percentiles_equal_a_recomputation_from_the_file(
    two_rates: list[serving.RunResult],
) -> None:
    for result in two_rates:
        done = [x for x in _lines(result.requests) if x["phase"] == "measured" and x["ok"]]
        ttft = [(float(x["first_token_s"]) - float(x["sent_s"])) * 1000 for x in done]  # type: ignore[arg-type]
        gaps = [
            (b - a) * 1000
            for x in done
            for a, b in pairwise(x["token_s"])  # type: ignore[call-overload]
        ]
        tpot = [
            (x["token_s"][-1] - x["token_s"][0]) * 1000 / (int(x["output_tokens"]) - 1)  # type: ignore[index,call-overload]
            for x in done
            if int(str(x["output_tokens"])) > 1
        ]
        m = result.metrics
        assert m.ttft_p50_ms == pytest.approx(np.percentile(ttft, 50))
        assert m.ttft_p90_ms == pytest.approx(np.percentile(ttft, 90))
        assert m.ttft_p99_ms == pytest.approx(np.percentile(ttft, 99))
        assert m.tpot_p50_ms == pytest.approx(np.percentile(tpot, 50))
        assert m.tpot_p99_ms == pytest.approx(np.percentile(tpot, 99))
        assert m.itl_p99_ms == pytest.approx(np.percentile(gaps, 99))
        window = max(float(x["end_s"]) for x in done) - min(float(x["sent_s"]) for x in done)  # type: ignore[arg-type]
        tokens = sum(int(str(x["output_tokens"])) for x in done)
        assert m.output_tokens_per_s == pytest.approx(tokens / window)


def test_goodput_counts_only_requests_meeting_every_target(
    two_rates: list[serving.RunResult],
) -> None:
    """Limits at the medians: some requests meet one target and not the other."""
    path = two_rates[1].requests
    done = [r for r in serving.read_records(path) if r.ok]
    ttft = sorted((r.first_token_s or 0) - (r.sent_s or 0) for r in done)
    e2e = sorted((r.end_s or 0) - (r.sent_s or 0) for r in done)
    ttft_limit, e2e_limit = ttft[len(ttft) // 2] * 1000, e2e[len(e2e) // 2] * 1000
    targets = [
        serving.parse_target(f"ttft_p99_ms={ttft_limit}"),
        serving.parse_target(f"e2e_p99_ms={e2e_limit}"),
    ]
    good = [
        r
        for r in done
        if ((r.first_token_s or 0) - (r.sent_s or 0)) * 1000 <= ttft_limit
        and ((r.end_s or 0) - (r.sent_s or 0)) * 1000 <= e2e_limit
    ]
    meets_ttft = [
        r for r in done if ((r.first_token_s or 0) - (r.sent_s or 0)) * 1000 <= ttft_limit
    ]
    m = serving.compute(path, targets)
    assert m.good_requests == len(good) < len(done)
    assert m.goodput_rps == pytest.approx(len(good) / (m.window_s or 0))
    assert serving.compute(path, targets[:1]).good_requests == len(meets_ttft) >= len(good)


def test_a_wrong_model_name_gives_failed_records_with_the_servers_reason(
    server: serving.LocalServer, tmp_path: Path
) -> None:
    scenario = _scenario(server, model="no-such-model")
    (result,) = serving.sweep(scenario, [serving.Arrivals(rate=10, requests=3)], tmp_path)
    records = serving.read_records(result.requests)
    assert len(records) == 3 and not any(r.ok for r in records)
    assert all(r.http_status == 400 for r in records)
    assert all(
        str(r.reason).startswith("HTTP 400 from /v1/completions: ")
        and "no-such-model" in str(r.reason)
        for r in records
    )
    assert result.notes == [
        f"model 'no-such-model' is not among the endpoint's models ({MODEL.resolve()})"
    ]


def test_an_unreachable_port_gives_failed_records_and_a_failing_exit(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    result = CliRunner().invoke(
        cli,
        [
            "serve-bench",
            "--endpoint",
            url,
            "--model",
            "m",
            "--rate",
            "10",
            "--requests",
            "3",
            "--warmup",
            "0",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "failed: 3 x endpoint unreachable (first: endpoint unreachable: " + url in result.output
    assert "error: no request of rate-10 completed: nothing was measured" in result.output
    records = serving.read_records(tmp_path / "rate-10" / "requests.jsonl")
    assert [r.ok for r in records] == [False] * 3


def test_a_server_killed_mid_run_gives_failed_requests_with_their_reason(tmp_path: Path) -> None:
    """Three requests always in flight; the server is killed once two have ended, so the
    requests in flight then lose their stream and the later ones find no server."""
    requests = tmp_path / "out" / "concurrency-3" / "requests.jsonl"
    with serving.LocalServer(MODEL, tmp_path / "serve.log") as server:

        def kill_after_two_records() -> None:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                if requests.is_file() and len(requests.read_bytes().splitlines()) >= 2:
                    server.kill()
                    return
                time.sleep(0.01)

        killer = threading.Thread(target=kill_after_two_records)
        killer.start()
        scenario = _scenario(server, max_tokens=32)
        arrivals = serving.Arrivals(concurrency=3, requests=10)
        (result,) = serving.sweep(scenario, [arrivals], tmp_path / "out")
        killer.join()
    records = serving.read_records(result.requests)
    assert sorted(r.index for r in records) == list(range(10))
    failed = {r.index: str(r.reason) for r in records if not r.ok}
    kinds = {index: reason.split(":")[0] for index, reason in failed.items()}
    assert result.metrics.requests_completed == 10 - len(failed) >= 2
    assert set(kinds.values()) <= {"stream cut", "connection lost", "endpoint unreachable"}
    in_flight = [i for i, kind in kinds.items() if kind in ("stream cut", "connection lost")]
    assert 1 <= len(in_flight) <= 3, failed
    assert result.metrics.failures == dict(Counter(kinds.values()))


def test_serve_bench_starts_and_stops_a_local_server_and_prints_the_figures(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "serve-bench",
            "--start-local",
            str(MODEL),
            "--rate",
            "5",
            "--requests",
            "4",
            "--max-tokens",
            "4",
            "--target",
            "ttft_p99_ms=60000",
            "--out",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 0, result.output
    sha = serving_sha(tmp_path / "rate-5" / "requests.jsonl")
    assert f"requests: {tmp_path / 'rate-5' / 'requests.jsonl'}  sha256 {sha}" in result.output
    assert "rate-5: sent 4, completed 4, failed 0 (warm-up 2, not measured)" in result.output
    assert "target ttft_p99_ms <= 60000: " in result.output and ", met" in result.output
    log = (tmp_path / "transformers-serve.log").read_text(encoding="utf-8")
    assert "Uvicorn running on http://127.0.0.1:" in log and "Finished server process" in log
