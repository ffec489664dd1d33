"""The campaign on the real model (CPU): rotation, resume, fresh workers, commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, make_campaign, unexplained, variant
from toolkit import editing, layout
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.evidence.validate import validate
from toolkit.runner.instruments import achieved
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

SERIES_1 = [variant("b1-fp32", 1), variant("b4-fp32", 4), variant("b8-fp32", 8)]


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def _plan(book: Path) -> list[tuple[str, int, int, str]]:
    return [
        (r["variant_id"], r["repetition"], r["order_position"], r["status"]) for r in attempts(book)
    ]


def test_attempts_run_in_rotated_order(tmp_path: Path) -> None:
    """1-4-8, then 4-8-1, then 8-1-4 (R11), one row each, numbered in running order."""
    book = make_campaign(tmp_path, 4, SERIES_1, repetitions=3, warmup_rule="none")
    code, output = _invoke("run", str(book))
    assert code == 0, output
    assert _plan(book) == [
        ("b1-fp32", 1, 1, "completed"),
        ("b4-fp32", 1, 2, "completed"),
        ("b8-fp32", 1, 3, "completed"),
        ("b4-fp32", 2, 1, "completed"),
        ("b8-fp32", 2, 2, "completed"),
        ("b1-fp32", 2, 3, "completed"),
        ("b8-fp32", 3, 1, "completed"),
        ("b1-fp32", 3, 2, "completed"),
        ("b4-fp32", 3, 3, "completed"),
    ]
    ids = [r["attempt_id"] for r in attempts(book)]
    assert [i[:-5] for i in ids[:2]] == ["a001-b1-fp32-r1", "a002-b4-fp32-r1"]
    assert re.fullmatch(r"-[0-9a-f]{4}", ids[0][-5:]) and len({i[-4:] for i in ids}) == 1
    lines = output.splitlines()
    # The pre-flight (issue 38) between the plan and the first attempt: the models checked,
    # the estimate.
    first = next(i for i, line in enumerate(lines) if line.startswith("a001-"))
    assert lines[1] == "pre-flight of 3 variant(s) (`iteralab check`):"
    assert any(line.startswith("  campaign: ~") for line in lines[2:first])
    lines = [lines[0], *lines[first:]]
    assert lines[0] == (
        f"{book}: 9 attempt(s) to run, 4 items each, process policy shared; "
        "order b1-fp32-b4-fp32-b8-fp32 / b4-fp32-b8-fp32-b1-fp32 / "
        "b8-fp32-b1-fp32-b4-fp32"
    )
    assert re.fullmatch(
        r"a001-b1-fp32-r1-[0-9a-f]{4} +completed measured +\d+\.\d\d s  "
        r"metric 0\.5000  pass, accepted",
        lines[1],
    )
    assert re.fullmatch(
        r"recorded 9 attempt\(s\) in .+: 9 completed, 0 failed, "
        r"0 interrupted",
        lines[10],
    )
    assert lines[11:13] == [f"workbook: {book}", f"predictions: {tmp_path}/campaign_predictions/"]
    assert lines[13].startswith("time: wall ") and lines[14].startswith("time: overhead (s): ")
    assert len(lines) == 15
    assert validate(store.read(book), book) == []
    # Three variants in one environment: each attempt linked to a Manifest row of its variant.
    # A variant gets a further row only when the campaign's peak rose between its attempts:
    # such rows differ in the probe's columns alone, never in the environment.
    rows = store.read(book).tables["Manifest"]
    manifests = {m["manifest_id"]: m["variant_id"] for m in rows}
    assert set(manifests.values()) == {"b1-fp32", "b4-fp32", "b8-fp32"}
    assert all(manifests[r["manifest_id"]] == r["variant_id"] for r in attempts(book))
    varying = {"manifest_id", "recorded_at", *achieved.MANIFEST_COLUMNS}
    varying |= {layout.MANIFEST.column(n).reason for n in achieved.MANIFEST_COLUMNS}
    kept = [{k: v for k, v in m.items() if k not in varying} for m in rows]
    for name in manifests.values():
        assert len({repr(sorted(m.items())) for m in kept if m["variant_id"] == name}) == 1


def test_the_resume_hints_repeat_the_runs_selection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a Ctrl-C, and when a run is refused for recorded attempts, the command offered
    is the same run with --resume: a bare --resume would have run every variant, here b1
    too, which this run never selected."""
    book = make_campaign(tmp_path, 8, SERIES_1[:2], warmup_rule="none")
    selection = ["--variant", "b4-fp32", "--threads", "1", "--timeout", "300"]
    same = f"iteralab run {book} --variant b4-fp32 --threads 1 --timeout 300 --resume"
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "interrupt@4:b4-fp32:1")
    code, output = _invoke("run", str(book), *selection, "--quiet")
    assert code == 130
    assert output.splitlines()[-1] == f"interrupted: continue with `{same}`"
    monkeypatch.delenv("ITERALAB_INJECT_FAULT")
    result = CliRunner().invoke(cli, ["run", str(book), *selection])
    assert result.exit_code == 2
    assert f"what to do: continue the campaign with `{same}`" in result.stderr
    code, output = _invoke(*same.split()[1:])  # the hint, as the user would paste it
    assert code == 0, output
    assert _plan(book) == [("b4-fp32", 1, 1, "interrupted"), ("b4-fp32", 1, 1, "completed")]


def test_ctrl_c_records_an_interrupted_row_and_resume_finishes_the_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interrupted row stays; --resume runs only what is missing, redoing nothing."""
    book = make_campaign(tmp_path, 8, SERIES_1[:2], repetitions=2, warmup_rule="none")
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "interrupt@4:b4-fp32:1")
    code, output = _invoke("run", str(book), "--quiet")
    assert code == 130
    assert output.splitlines()[-1] == f"interrupted: continue with `iteralab run {book} --resume`"
    assert _plan(book) == [("b1-fp32", 1, 1, "completed"), ("b4-fp32", 1, 2, "interrupted")]
    interrupted = attempts(book)[1]
    assert interrupted["items_completed"] == 4
    assert interrupted["notes"].startswith(
        "interrupted after 4 of 8 items (KeyboardInterrupt: injected by ITERALAB_INJECT_FAULT="
    )
    assert unexplained(interrupted) == []

    monkeypatch.delenv("ITERALAB_INJECT_FAULT")
    code, output = _invoke("run", str(book))
    assert code == 2
    assert "already holds 2 attempt(s) of these variants under the current protocol" in output

    code, output = _invoke("run", str(book), "--resume", "--quiet")
    assert code == 0, output
    assert output.splitlines()[0].startswith("recorded 3 attempt(s) in ")
    assert _plan(book) == [
        ("b1-fp32", 1, 1, "completed"),
        ("b4-fp32", 1, 2, "interrupted"),
        ("b4-fp32", 1, 2, "completed"),
        ("b4-fp32", 2, 1, "completed"),
        ("b1-fp32", 2, 2, "completed"),
    ]
    ids = [r["attempt_id"] for r in attempts(book)]
    assert [i[:-5] for i in ids[2:]] == ["a003-b4-fp32-r1", "a004-b4-fp32-r2", "a005-b1-fp32-r2"]
    assert ids[0][-4:] != ids[2][-4:]  # the resumed run has its own tag
    code, output = _invoke("run", str(book), "--resume")
    assert (code, output) == (0, f"nothing to run: all 4 planned attempts are recorded in {book}\n")


def test_a_failed_attempt_is_not_retried_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """R13: an out-of-memory row settles its slot; no silent rerun."""
    book = make_campaign(tmp_path, 8, SERIES_1[:1], warmup_rule="none")
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "oom@4")
    assert _invoke("run", str(book), "--quiet")[0] == 0
    monkeypatch.delenv("ITERALAB_INJECT_FAULT")
    code, output = _invoke("run", str(book), "--resume")
    assert output == f"nothing to run: all 1 planned attempts are recorded in {book}\n"
    assert _plan(book) == [("b1-fp32", 1, 1, "failed")]


#: How fresh workers start: forked from the run's fork server, or each its own interpreter.
LAUNCHERS = [pytest.param("1", id="fork-server"), pytest.param("0", id="python-m-worker")]


@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_fresh_workers_record_attempts_and_a_killed_worker_still_leaves_a_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_server: str
) -> None:
    """Process policy fresh: one worker per attempt; a worker killed mid-corpus leaves a
    failed row written by the campaign, with the items it reported done."""
    from toolkit.runner.driver import forkserver

    forked: list[int] = []
    real_start = forkserver.ForkServer.start

    def counting_start(self: forkserver.ForkServer, stderr: object) -> object:
        worker = real_start(self, stderr)  # type: ignore[arg-type]
        forked.append(worker.pid)
        return worker

    monkeypatch.setattr(forkserver.ForkServer, "start", counting_start)
    monkeypatch.setenv(forkserver.DISABLE_ENV, fork_server)
    book = make_campaign(tmp_path, 16, SERIES_1[:2], process_policy="fresh", threshold=0.4)
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "kill@8:b4-fp32")
    code, output = _invoke("run", str(book))
    assert code == 0, output
    # The pre-flight's worker, then one per attempt.
    assert len(forked) == (3 if fork_server == "1" else 0)
    done, killed = attempts(book)
    assert (done["status"], done["items_completed"], done["quality_verdict"]) == (
        "completed",
        16,
        "pass",
    )
    assert "lifetime peak of the shared" not in done["notes"]
    assert (killed["status"], killed["items_completed"], killed["expected_ids"]) == (
        "failed",
        8,
        16,
    )
    assert killed["notes"] == (
        "worker exited with signal SIGKILL after 8 of 16 items (its last progress report)"
    )
    assert killed["measured_s_reason"] == (
        "worker process ended without a record (failed during measured)"
    )
    assert unexplained(killed) == []
    assert validate(store.read(book), book) == []


@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_a_real_sigint_stops_a_worker_with_an_interrupted_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_server: str
) -> None:
    """What Ctrl-C does to a fresh worker: the measured window stops, the record says
    interrupted with the items done, the journal holds it, the exit code is 130."""
    import os
    import signal
    import subprocess

    from toolkit.runner.attempt import AttemptSpec
    from toolkit.runner.driver import campaign, forkserver

    book = make_campaign(tmp_path, 24, SERIES_1[:1], process_policy="fresh")
    prepared = campaign.prepare(book, campaign.Options())
    spec = AttemptSpec(
        str(book.resolve()),
        "a001-b1-fp32-r1",
        prepared.variants["b1-fp32"],
        1,
        1,
        prepared.protocol,
        prepared.protocol_sha256,
        prepared.corpus_sha256,
        prepared.corpus_items,
    )
    monkeypatch.setenv(forkserver.DISABLE_ENV, fork_server)
    monkeypatch.setenv("ITERALAB_INJECT_FAULT", "hang@4")  # stalls after 4 items, no timeout
    workers = campaign.Workers(prepared)
    events = []
    try:
        proc, stderr = workers.start()
        with stderr:
            expected = forkserver.ForkedWorker if fork_server == "1" else subprocess.Popen
            assert isinstance(proc, expected)
            proc.stdin.write(spec.to_json())
            proc.stdin.close()
            with proc.stdout:
                for line in proc.stdout:
                    events.append(json.loads(line))
                    if events[-1] == {
                        "event": "items",
                        "phase": "measured",
                        "done": 4,
                        "total": 24,
                    }:
                        os.kill(proc.pid, signal.SIGINT)
            assert proc.wait() == 130
    finally:
        workers.close()
    record = events[-1]["record"]
    assert (record["attempt"]["status"], record["attempt"]["items_completed"]) == ("interrupted", 4)
    assert record["attempt"]["notes"].startswith(
        "interrupted after 4 of 24 items (KeyboardInterrupt: Ctrl-C)"
    )
    assert journal.read(book)[0]["attempt"]["attempt_id"] == "a001-b1-fp32-r1"


def test_a_corpus_error_stops_the_campaign_before_any_attempt(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, SERIES_1[:1])
    corpus_file = tmp_path / "corpus.jsonl"
    lines = corpus_file.read_text(encoding="utf-8").splitlines(keepends=True)
    corpus_file.write_text("".join(lines + lines[:1]), encoding="utf-8")
    code, output = _invoke("run", str(book))
    first_id = json.loads(lines[0])["id"]
    assert code == 1
    assert output.splitlines()[0] == (
        f"error: {corpus_file}: line 5: duplicate id {first_id!r} (first on line 1)"
    )
    assert attempts(book) == []


def test_an_unlocked_protocol_is_refused(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, SERIES_1[:1], lock=False)
    code, output = _invoke("run", str(book))
    assert code == 1
    assert output.splitlines()[0] == f"error: {book.resolve()}: the protocol is not locked"


def test_a_cuda_variant_without_cuda_is_refused_up_front(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    book = make_campaign(tmp_path, 4, [variant("g1", 1, device="cuda")], reference_variant="g1")
    code, output = _invoke("run", str(book))
    assert code == 2
    assert output.splitlines()[0] == (
        "error: variant(s) g1 run on cuda, but torch sees no CUDA device here"
    )


def test_ingest_replays_what_the_workbook_lacks(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, SERIES_1[:1], warmup_rule="none")
    assert _invoke("run", str(book), "--quiet")[0] == 0
    entry = journal.read(book)[0]
    # Lose the row, as a crash before ingestion would.
    with editing.change(book, refresh_derived=False) as edit:
        data = edit.data
        data.tables["Attempts"].clear()
        data.row_numbers["Attempts"].clear()
    code, output = _invoke("ingest", str(book))
    assert (code, output) == (
        0,
        "ingested 1 attempt(s) and 0 manifest row(s) from "
        f"campaign.journal.jsonl; 0 already in {book}\n",
    )
    assert attempts(book)[0]["attempt_id"] == entry["attempt"]["attempt_id"]
    assert _invoke("ingest", str(book))[1] == (
        "ingested 0 attempt(s) and 0 manifest row(s) "
        f"from campaign.journal.jsonl; 1 already in "
        f"{book}\n"
    )


def test_env_says_what_is_installed() -> None:
    import platform

    import torch

    code, output = _invoke("env")
    assert code == 0
    labels = [line.split()[0] for line in output.splitlines()]
    expected_gpu = ["gpu 0"] if torch.cuda.is_available() else ["gpu"]
    assert labels[:6] == ["os", "python", "cpu", "ram", "torch", "backend"]
    assert f"torch         {torch.__version__}" in output.splitlines()
    assert (
        f"python        {platform.python_version()} ({platform.python_implementation()})"
        in output.splitlines()
    )
    if not torch.cuda.is_available():
        assert "gpu           no GPU: torch sees no CUDA or ROCm device" in output.splitlines()
    engines = [n for n, label in enumerate(labels) if label == "engine"]
    assert engines and engines == list(range(engines[0], len(labels)))  # the engines close it
    assert labels[engines[0] - 5 : engines[0]] == [
        "driver",
        "transformers",
        "packages",
        "code",
        "stack",
    ]
    assert "engine torch" in " ".join(output.splitlines()[engines[0]].split()[:2])
    assert expected_gpu[0].split()[0] in labels


def test_env_json_has_the_manifest_fields() -> None:
    code, output = _invoke("env", "--json")
    info = json.loads(output)
    assert code == 0
    assert set(info) == {
        "format",
        "os",
        "python",
        "cpu",
        "ram_bytes",
        "torch",
        "backend",
        "driver",
        "gpu_name",
        "gpu_memory_bytes",
        "compute_capability",
        "transformers",
        "code_version",
        "packages",
        "gpus",
        "host",
        "software_stack",
        "engines",
    }
    assert info["code_version"].startswith("iteralab 0.1.0, ")


@pytest.mark.slow
def test_quick_demo_runs_end_to_end(tmp_path: Path) -> None:
    """`iteralab demo DIR --quick`: the example campaign on 100 items, 2 repetitions."""
    folder = tmp_path / "demo"
    code, output = _invoke("demo", str(folder), "--quick", "--quiet")
    assert code == 0, output
    book = folder / "example_campaign.xlsx"
    lines = output.splitlines()
    assert lines[0] == f"demo workbook: {book} (quick: first 100 items, 2 repetitions)"
    # Said once, as what the quick subset is, never as a warning (validate notes it too).
    assert lines.pop(1) == (
        "note: the quick demo runs 2 repetitions, too few for any pair to separate (4 or more "
        "can): a smoke run, not the comparison; `iteralab demo` without --quick runs the "
        "whole sample"
    )
    assert re.fullmatch(
        r"recorded 12 attempt\(s\) in .+: 12 completed, 0 failed, "
        r"0 interrupted",
        lines[1],
    )
    assert lines[2:4] == [
        f"workbook: {book}",
        f"predictions: {folder}/example_campaign_predictions/",
    ]
    # Where the run's time went (docs/explanation/overhead.md).
    assert lines[4].startswith("time: wall ") and lines[5].startswith("time: overhead (s): ")
    assert lines[6].startswith(
        "demo: Verification filled with the runner's accepted corpora, "
        "marked 'iteralab demo: an EXAMPLE standing in for your own "
        "check'"
    )
    # The demo ends with `iteralab report` on its workbook, the money chain shown.
    assert lines[7].startswith(f"refreshed {book} (protocol ")
    assert "  demo-rental: 35.00 USD [no ledger imported]" in lines
    assert "  total incurred (USD): 35.00 USD [no ledger imported]" in lines
    assert any(
        line.startswith(
            "    flat-7d, on-demand, example provider (demo), DEMO-0001; "
            "Tariffs: 7-day plan of 2026-09-24 x 1 lot(s) (EXAMPLE figure "
            "typed for the demo"
        )
        for line in lines
    )
    assert (
        "  b1-fp32: 1 lot(s) x 7-day plan, 35.00 USD per expected corpus (forecast; "
        "EXAMPLE figures)"
    ) in lines
    assert (
        "    spent per accepted corpus: 35.00 USD incurred / 1 accepted corpus(es) "
        "confirmed = 35.00 USD"
    ) in lines
    assert (
        f"wrote {folder}/example_campaign_report/: report.md, attempts.csv, "
        "manifest.csv, durations.png, projected_cost_per_expected.png"
    ) in lines
    assert lines[-1].startswith("demo time: ")  # the whole demo, its report included
    data = store.read(book)
    # Series 1 and the engine series: torch and onnxruntime fp32 give the same labels; the
    # TF-IDF plugin is refused by a subgroup; int8 falls whichever way the gate says.
    rows: dict[str, list[dict[str, object]]] = {}
    for row in data.tables["Attempts"]:
        rows.setdefault(str(row["variant_id"]), []).append(row)
    assert sorted(rows) == [
        "b1-fp32",
        "b4-fp32",
        "b8-fp32",
        "b8-ort-fp32",
        "b8-ort-int8",
        "b8-tfidf",
    ]
    for vid in ("b1-fp32", "b4-fp32", "b8-fp32", "b8-ort-fp32"):
        assert [(r["metric_value"], r["corpus_accepted"]) for r in rows[vid]] == [(0.66, "yes")] * 2
    assert [(r["metric_value"], r["quality_verdict"]) for r in rows["b8-tfidf"]] == [
        (0.73, "fail")
    ] * 2
    for r in rows["b8-ort-int8"]:
        assert (r["status"], r["corpus_accepted"]) == (
            "completed",
            "yes" if r["quality_verdict"] == "pass" else "no",
        )
    assert [r["action"] for r in data.tables["Audit"]] == ["lock", "amend", "prices"]
    confirmed = {r["variant_id"]: r["confirmed_corpora"] for r in data.tables["Verification"]}
    assert [confirmed.pop(v) for v in ("b1-fp32", "b4-fp32", "b8-fp32", "b8-ort-fp32")] == [1] * 4
    assert confirmed.pop("b8-tfidf") == 0 and set(confirmed) <= {"b8-ort-int8"}
    assert validate(data, book) == []
    code, output = _invoke("demo", str(folder))
    assert code == 2 and "already exists: the demo does not overwrite a campaign" in output


def test_a_fork_server_that_cannot_start_leaves_workers_to_start_on_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose interpreter dies at start is said, and the run falls back."""
    import subprocess

    from toolkit.runner.driver import campaign, forkserver

    with pytest.raises(forkserver.ForkServerError, match="did not get ready"):
        forkserver.ForkServer({"PYTHONHOME": str(tmp_path / "no-python")}).ready()

    def broken(self: object, env: dict[str, str]) -> None:
        raise forkserver.ForkServerError("cannot start the fork server: test")

    monkeypatch.setattr(forkserver.ForkServer, "__init__", broken)
    book = make_campaign(tmp_path / "c", 4, SERIES_1[:1], process_policy="fresh")
    workers = campaign.Workers(campaign.prepare(book, campaign.Options()))
    assert workers.server is None
    proc, stderr = workers.start()
    with stderr:
        assert isinstance(proc, subprocess.Popen)
        proc.stdin.close()  # no spec: the worker stops at once
        proc.stdout.close()
        assert proc.wait(timeout=120) != 0


def test_a_fork_server_started_ahead_is_taken_by_the_campaign_and_forks_its_workers(
    tmp_path: Path,
) -> None:
    """The demo starts the server before preparing; the campaign's Workers take that one."""
    from toolkit.runner.driver import campaign, forkserver

    forkserver.prestart()
    started = forkserver._prestarted
    assert started is not None
    book = make_campaign(tmp_path, 4, SERIES_1[:1], process_policy="fresh")
    workers = campaign.Workers(campaign.prepare(book, campaign.Options()))
    try:
        assert workers.server is started and forkserver._prestarted is None
        proc, stderr = workers.start()
        with stderr:
            assert isinstance(proc, forkserver.ForkedWorker)  # forked, not a new interpreter
            proc.stdin.close()  # no spec: the worker stops at once
            proc.stdout.close()
            assert proc.wait() != 0
    finally:
        workers.close()
    # One started under another environment is not used: the workers would not see theirs.
    forkserver.prestart({**forkserver.worker_env(), "ITERALAB_TEST_OTHER": "1"})
    assert forkserver.take(forkserver.worker_env()) is None
    forkserver.prestart({**forkserver.worker_env(), "HF_HUB_OFFLINE": "0"})
    assert forkserver.take(forkserver.worker_env()) is None
    # A variable set since by a library this process imported does not discard it: pandera's
    # imports set two, after the demo had started its server.
    mine = forkserver.worker_env()
    mine.pop("PYARROW_IGNORE_TIMEZONE", None)
    forkserver.prestart(mine)
    kept = forkserver._prestarted
    assert kept is not None
    assert forkserver.take({**mine, "PYARROW_IGNORE_TIMEZONE": "1"}) is kept
    kept.close()
    # One no campaign takes (a run whose pre-flight failed) is closed.
    forkserver.prestart()
    unused = forkserver._prestarted
    assert unused is not None
    forkserver.discard()
    assert forkserver._prestarted is None and unused._process.poll() is not None


@pytest.mark.parametrize("fork_server", LAUNCHERS)
def test_the_next_attempts_worker_starts_while_the_previous_attempt_is_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fork_server: str
) -> None:
    """Each attempt after the first takes a worker started when the previous worker sent
    its record; every attempt still runs in a process of its own, and no worker is started
    after the last attempt."""
    from toolkit.runner.driver import campaign, forkserver

    calls: list[str] = []
    workers: list[int] = []
    real_start, real_ahead = campaign.Workers.start, campaign.Workers.ahead

    def start(self: campaign.Workers) -> object:
        calls.append("start, one waiting" if self.spare is not None else "start")
        proc, stderr = real_start(self)
        workers.append(proc.pid)
        return proc, stderr

    def ahead(self: campaign.Workers) -> None:
        calls.append("ahead")
        real_ahead(self)

    monkeypatch.setattr(campaign.Workers, "start", start)
    monkeypatch.setattr(campaign.Workers, "ahead", ahead)
    monkeypatch.setenv(forkserver.DISABLE_ENV, fork_server)
    book = make_campaign(tmp_path, 8, SERIES_1, process_policy="fresh", repetitions=1)
    code, output = _invoke("run", str(book), "--quiet")
    assert code == 0, output
    # ahead() starts the spare through start(): the attempts' own calls take it.
    assert calls == [
        "start",
        "ahead",
        "start",
        "start, one waiting",
        "ahead",
        "start",
        "start, one waiting",
    ]
    assert len(set(workers)) == 3  # three processes, one per attempt
    assert [a["status"] for a in attempts(book)] == ["completed"] * 3


def test_the_fork_server_says_each_workers_exit_by_pid_while_several_live(
    tmp_path: Path,
) -> None:
    """Two forked workers alive at once: each one's exit code reaches its own owner, in
    whichever order they end; a worker started ahead and not needed is stopped at close."""
    import signal

    from toolkit.runner.driver import campaign, forkserver

    server = forkserver.ForkServer(forkserver.worker_env())
    try:
        with (
            open(tmp_path / "a", "w+", encoding="utf-8") as err_a,
            open(tmp_path / "b", "w+", encoding="utf-8") as err_b,
        ):
            first, second = server.start(err_a), server.start(err_b)
            first.kill()  # ends first, killed
            second.stdin.close()  # no spec: ends with an error, after the first
            second.stdout.close()
            assert second.wait() == 1
            assert first.wait() == -signal.SIGKILL
            first.stdin.close()
            first.stdout.close()
    finally:
        server.close()
    book = make_campaign(tmp_path / "c", 4, SERIES_1[:1], process_policy="fresh")
    workers = campaign.Workers(campaign.prepare(book, campaign.Options()))
    workers.ahead()
    assert workers.spare is not None
    spare, _ = workers.spare
    workers.close()
    assert workers.spare is None and spare.returncode == -signal.SIGKILL
