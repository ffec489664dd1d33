"""Measurement commands: run, env, demo, ingest. torch is imported only inside their bodies."""

from __future__ import annotations

import errno
import json
import math
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any

import click

from toolkit.evidence import scenario

if TYPE_CHECKING:  # the campaign's types, for the checker: the modules load in the bodies
    from toolkit.commands.display import Display
    from toolkit.runner.driver.campaign import Campaign, Executor, Options, Result
    from toolkit.runner.plan import Slot
    from toolkit.runner.preflight.result import VariantCheck


class _FiniteSeconds(click.FloatRange):
    """A number of seconds of at least 1: nan and inf are not (a range check lets nan by)."""

    name = "seconds"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a number of seconds; give one such as 600", param, ctx)
        return float(number)


SECONDS_AT_LEAST_1 = _FiniteSeconds(min=1)

WORKBOOK = click.argument("workbook", type=click.Path(dir_okay=False, path_type=Path))


def _duration(seconds: float) -> str:
    minutes, rest = divmod(int(round(seconds)), 60)
    return f"{minutes} min {rest} s" if minutes else f"{seconds:.1f} s"


def _campaign(
    workbook: Path,
    options: Options,
    quiet: bool,
    as_json: bool = False,
    cluster: tuple[str, float | None] | None = None,
) -> dict[str, Any] | None:
    """Prepare, run and report a campaign under its campaign lock; exit 130 after Ctrl-C.
    ``cluster``: the Ray cluster's address and how long to wait for its labels. Returns
    the run's time breakdown (None when nothing ran, or on a cluster)."""
    from toolkit.runner.driver.campaign_lock import campaign_lock

    with campaign_lock(workbook.resolve()) as takeover:
        if takeover:
            click.echo(f"note: {takeover}", err=True)
        try:
            return _locked_campaign(workbook, options, quiet, as_json, cluster)
        finally:
            if cluster is not None:
                _leave_cluster()


def _join_cluster(cluster: tuple[str, float | None], prepared: Campaign) -> Executor:
    """Join the Ray cluster and check its labels before anything starts: the executor."""
    try:
        from toolkit.cluster import executor
    except ImportError as exc:
        from toolkit.errors import UsageError

        raise UsageError(
            f"--cluster needs Ray, which is not installed here ({exc})",
            hint="pip install 'iteragpu-lab[cluster]'",
        ) from exc
    address, wait_s = cluster
    chosen = executor.RayExecutor(wait_s)
    chosen.placement(prepared)
    executor.connect(address)
    chosen.check(prepared)
    return chosen


def _leave_cluster() -> None:
    import sys

    if "toolkit.cluster.executor" in sys.modules:  # it joined (ray is installed)
        from toolkit.cluster import executor

        executor.disconnect()


def _say_recorded(workbook: Path, result: Result, counts: dict[str, int]) -> None:
    click.echo(
        f"recorded {len(result.records)} attempt(s) in {_duration(result.elapsed_s)}: "
        f"{counts['completed']} completed, {counts['failed']} failed, "
        f"{counts['interrupted']} interrupted"
    )
    click.echo(f"workbook: {workbook}")
    click.echo(f"predictions: {workbook.parent / result.predictions_dir.name}/")
    if result.time is not None:
        from toolkit.report import run_time

        for line in run_time.short(result.time):
            click.echo(f"time: {line}")


def _locked_campaign(
    workbook: Path,
    options: Options,
    quiet: bool,
    as_json: bool,
    cluster: tuple[str, float | None] | None = None,
) -> dict[str, Any] | None:
    from toolkit.commands import check
    from toolkit.evidence.journal import journal_path
    from toolkit.runner.driver import campaign, session

    assert isinstance(options, campaign.Options)
    prepared = campaign.prepare(workbook, options)
    _say_caught_up(workbook, prepared)
    if not prepared.todo:
        _nothing_to_run(workbook, prepared, as_json)
        _refuse_forged(journal_path(workbook), prepared.refused, said=True)
        return None
    executor = _join_cluster(cluster, prepared) if cluster is not None else None
    shown = _display(workbook, prepared, quiet, as_json, cluster[0] if cluster else None)
    resume = options.resume_command(workbook, cluster[0] if cluster else None)
    said = (lambda line: None) if quiet else shown.echo

    def preflight() -> list[VariantCheck]:
        return check.before_run(workbook, prepared, said, options.timeout_s)

    with _full_disk_said(workbook, resume):
        result = session.run(prepared, options, shown, executor, preflight)
    _close_run(workbook, prepared, result, as_json, resume)
    _refuse_forged(journal_path(workbook), prepared.refused, said=True)
    return result.time


def _say_caught_up(workbook: Path, prepared: Campaign) -> None:
    """What catching up on the journal left out, as `ingest` says it: torn lines, then each
    record refused (journal, attempt, why, what to do), not counted as run."""
    from toolkit.evidence import journal

    for note in journal.notes(workbook):
        click.echo(f"note: {note}", err=True)
    _say_refused(prepared.refused)
    if prepared.refused:
        click.echo(
            f"note: {len(prepared.refused)} journal record(s) not ingested (refused above) "
            "and not counted as run; the run goes on, then exits 1 (as `iteralab ingest` "
            "does) until their lines are removed from the journal",
            err=True,
        )


@contextmanager
def _full_disk_said(workbook: Path, resume: str) -> Iterator[None]:
    """A full disk stops the run with what to free and how to continue; other errors pass."""
    from toolkit.errors import ToolkitError

    try:
        yield
    except (ToolkitError, OSError) as exc:
        if not _disk_full(exc):
            raise
        raise _stopped_by_a_full_disk(exc, workbook, resume) from exc


def _display(
    workbook: Path, prepared: Campaign, quiet: bool, as_json: bool, cluster: str | None
) -> Display:
    """What shows the run's progress (JSON lines with --json), its first line said."""
    from toolkit.commands import display
    from toolkit.runner import decoding

    own = {"generation": decoding.GENERATION_COLUMNS, "serving": decoding.SERVING_COLUMNS}
    task_columns = own.get(decoding.task_of(prepared.protocol), ())
    shown = display.JsonLines(task_columns) if as_json else display.make(quiet)
    if not quiet and not as_json:
        shown.echo(_announcement(workbook, prepared, cluster))
    return shown


def _nothing_to_run(workbook: Path, prepared: Campaign, as_json: bool) -> None:
    """Every planned attempt is recorded: say so (an empty run document with --json), and
    the advice on models that failed to load."""
    from toolkit.commands import check, documents
    from toolkit.runner.driver.campaign import Result

    message = (
        f"nothing to run: all {len(prepared.slots)} planned attempts are recorded in {workbook}"
    )
    if as_json:
        click.echo(message, err=True)
        documents.emit(documents.run_document(workbook, Result(workbook=workbook)))
    else:
        click.echo(message)
    for line in check.load_failure_advice(workbook, prepared.known, prepared.protocol_sha256):
        click.echo(f"note: {line}", err=True)


def _announcement(workbook: Path, prepared: Campaign, cluster: str | None) -> str:
    """The run's first line: attempts to run, what each processes (items; a serving
    attempt's requests, arrival and rates), process policy, order, cluster."""
    skipped = len(prepared.slots) - len(prepared.todo)
    each = f"{prepared.corpus_items} items each"
    if scenario.is_serving(prepared.protocol):
        todo = [prepared.variants[slot.variant_id] for slot in prepared.todo]
        each = scenario.load_text(prepared.protocol, todo)
    return (
        f"{workbook}: {len(prepared.todo)} attempt(s) to run"
        + (f" ({skipped} already recorded)" if skipped else "")
        + f", {each}, process policy "
        f"{prepared.protocol.get('process_policy')}; {_order_line(prepared.slots)}"
        + (f"; on the Ray cluster at {cluster}" if cluster else "")
    )


def _close_run(
    workbook: Path, prepared: Campaign, result: Result, as_json: bool, resume: str
) -> None:
    """What the run recorded (the run document with --json), the load-failure advice, then
    why it stopped short, if it did: attempts left in the journal, a CUDA error, Ctrl-C."""
    from toolkit.commands import check, documents
    from toolkit.runner.driver import session

    if as_json:
        documents.emit(documents.run_document(workbook, result))
    else:
        _say_recorded(workbook, result, result.counts())
    for line in check.load_failure_advice(workbook, prepared.known, prepared.protocol_sha256):
        click.echo(f"note: {line}", err=True)
    session.refuse_short_stop(workbook, result, resume)
    if result.interrupted:
        click.echo(f"interrupted: continue with `{resume}`")
        raise click.exceptions.Exit(130)


@click.command()
@WORKBOOK
@click.option("--series", type=int, help="Run only the variants of this series.")
@click.option(
    "--variant",
    "variant_ids",
    multiple=True,
    metavar="ID",
    help="Run only this variant (repeatable).",
)
@click.option(
    "--resume",
    is_flag=True,
    help="Continue an interrupted campaign: run the slots without a completed or failed attempt.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    help="torch CPU threads (default: what torch chose); recorded in the manifest.",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=SECONDS_AT_LEAST_1,
    help="Seconds an attempt may run; past it the attempt is a failed row.",
)
@click.option(
    "--cluster",
    metavar="HOST:PORT|auto",
    help="Run each attempt as a Ray task on a node of its variant's label "
    "(`iteralab worker start`); this machine stays the only writer.",
)
@click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(min=0),
    metavar="SECONDS",
    help="With --cluster: wait this long for nodes of the labels needed.",
)
@click.option("--quiet", is_flag=True, help="No progress bars or per-attempt lines.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One iteralab-attempt/1 JSON line per finished attempt, then an "
    "iteralab-run/1 summary line (docs/json.md); nothing else on stdout.",
)
def run(
    workbook: Path,
    series: int | None,
    variant_ids: tuple[str, ...],
    resume: bool,
    threads: int | None,
    timeout_s: float | None,
    cluster: str | None,
    wait_s: float | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Run the locked campaign of WORKBOOK; append one Attempts row per attempted run.

    Every variant (or the selected ones) runs the protocol's repetitions in
    rotated order (1-4-8, 4-8-1, 8-1-4, ...), each attempt in a fresh process
    unless the protocol says shared. Failures and Ctrl-C leave rows too;
    predictions go to WORKBOOK_predictions/ beside the workbook. With --cluster,
    labels run in parallel, each node one attempt at a time.
    """
    from toolkit.errors import UsageError
    from toolkit.runner.driver.campaign import Options

    if wait_s is not None and cluster is None:
        raise UsageError(
            "--wait waits for cluster nodes: give --cluster too",
            hint="iteralab run WORKBOOK --cluster HOST:PORT --wait 300",
        )
    options = Options(
        series=series,
        variant_ids=variant_ids,
        resume=resume,
        threads=threads,
        timeout_s=timeout_s,
        devices_here=cluster is None,
    )
    _campaign(workbook, options, quiet, as_json, None if cluster is None else (cluster, wait_s))


def _disk_full(exc: BaseException) -> bool:
    """Whether a full disk (or quota) is behind ``exc``: itself, or what it was raised from."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _stopped_by_a_full_disk(exc: BaseException, workbook: Path, resume: str) -> Exception:
    """The run's one line when the disk filled: which file, that the run stopped, what the
    journal keeps, and how to go on once there is space."""
    from toolkit.errors import ToolkitError
    from toolkit.evidence import journal

    if isinstance(exc, ToolkitError):
        what = exc.message
    else:
        assert isinstance(exc, OSError)
        what = f"{exc.filename}: {exc.strerror}" if exc.filename else str(exc.strerror)
    log = journal.journal_path(workbook)
    return ToolkitError(
        f"{what}; the run stopped: the attempts recorded in {log.name} are kept",
        hint=f"free disk space in {workbook.resolve().parent}, then `{resume}`: it first adds "
        "the journal's attempts to the workbook (an attempt whose record the full disk "
        "refused becomes an interrupted row), then runs the slots left",
    )


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the environment as JSON.")
def env(as_json: bool) -> None:
    """Print what is really installed: OS, CPU, RAM, torch build, GPUs, driver, versions."""
    from toolkit.plumbing import engines
    from toolkit.runner.instruments import environment

    info = environment.collect()
    installed = engines.installed()
    if as_json:
        from toolkit.commands import documents

        click.echo(
            json.dumps({"format": documents.ENV, **info, "engines": dict(installed)}, indent=2)
        )
        return
    for label, value in environment.describe(info):
        click.echo(f"{label:<13} {value}")
    for name, value in installed:
        click.echo(f"{'engine ' + name:<13} {value}")


@click.command()
@click.argument(
    "directory", required=False, default="demo", type=click.Path(file_okay=False, path_type=Path)
)
@click.option(
    "--quick",
    is_flag=True,
    help="A declared subset: the first 100 items, 2 repetitions (written into the "
    "copy's protocol as an amendment).",
)
@click.option(
    "--all",
    "all_variants",
    is_flag=True,
    help="Every declared variant, not only series 1 (and, in the classification example, "
    "the engine series 4).",
)
@click.option(
    "--task",
    type=click.Choice(["classification", "generation", "serving"]),
    default="classification",
    show_default=True,
    help="generation: samples/example_generation.xlsx, the sample causal LM "
    "continuing samples/prompts.jsonl (--quick: its first 40 prompts). serving: the sample "
    "causal LM served by `transformers serve` on 127.0.0.1, a two-rate sweep of streamed "
    "requests (--quick: 8 requests per rate); needs the serving extra.",
)
@click.option("--threads", type=click.IntRange(min=1), help="torch CPU threads.")
@click.option("--quiet", is_flag=True, help="No progress bars or per-attempt lines.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print what `run --json` prints (one iteralab-attempt/1 line per attempt, "
    "one iteralab-run/1 line), then the iteralab-report/1 document, one per line "
    "(docs/json.md); the demo's own lines go to stderr.",
)
@click.pass_context
def demo(
    ctx: click.Context,
    directory: Path,
    quick: bool,
    all_variants: bool,
    task: str,
    threads: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Run the sample campaign on this machine's CPU, in DIRECTORY (default ./demo).

    Copies samples/example_campaign.xlsx (filled and locked), the Austen corpus
    and the MiniLM head into DIRECTORY, runs series 1 (batch 1, 4, 8) and series 4
    (torch fp32 against onnxruntime fp32 and dynamic int8 and a TF-IDF plugin), or every
    variant with --all, prints where the workbook and predictions are, then runs
    `iteralab report` on it. --task generation copies samples/example_generation.xlsx,
    the sample causal LM and its prompts instead (series 1, or every variant with --all).
    --task serving starts `transformers serve` with the sample causal LM on 127.0.0.1,
    measures a two-rate sweep on it, stops it (its log stays in DIRECTORY) and reports.
    """
    if task == "serving":
        _serving_demo(ctx, directory, quick, threads, quiet, as_json)
        return
    from toolkit.runner.driver import forkserver

    # First of all: the server's imports of torch and transformers (seconds) then
    # overlap this command's own imports, the copy and the checks below.
    forkserver.prestart()
    from toolkit.commands import demo as sample
    from toolkit.commands.report import report
    from toolkit.report import charts
    from toolkit.runner.driver.campaign import Options

    workbook = sample.prepare(directory, quick=quick, task=task)
    # While the server still imports, this process would only wait: it imports the closing
    # report's plotting library now instead of after the last attempt.
    charts.preload()
    _say_demo_workbook(workbook, quick, task, as_json)
    chosen = () if all_variants else sample.plain_variants(workbook, task)
    options = Options(variant_ids=chosen, threads=threads)
    time = _campaign(workbook, options, quiet, as_json)
    closing = perf_counter()
    if sample.stand_in_verification(workbook):
        click.echo(
            f"demo: Verification filled with the runner's accepted corpora, marked "
            f"'{sample.STAND_IN}' (in a real campaign you confirm them yourself)",
            err=as_json,
        )
    ctx.invoke(report, workbook=workbook, folder=None, no_png=False, as_json=as_json)
    if time is not None:
        after = perf_counter() - closing
        wall = time["wall_s"] + after
        overhead = time["overhead_s"] + after
        click.echo(
            f"demo time: the stand-in verification and the report {after:.1f} s after "
            f"the run; wall {wall:.1f} s, the toolkit's overhead {overhead:.1f} s "
            f"({overhead / wall:.1%})",
            err=as_json,
        )


def _say_demo_workbook(workbook: Path, quick: bool, task: str, as_json: bool) -> None:
    """The demo's first line; a quick demo then says once, as a note, what its declared
    repetitions cannot tell (`validate` notes it too, never as a warning)."""
    from toolkit.commands import demo as sample
    from toolkit.report.protocol_warnings import quick_demo_note

    if not quick:
        click.echo(f"demo workbook: {workbook}", err=as_json)
        return
    click.echo(
        f"demo workbook: {workbook} (quick: first {sample.QUICK_ITEMS_BY_TASK[task]} items, "
        f"{sample.QUICK_REPETITIONS} repetitions)",
        err=as_json,
    )
    click.echo(f"note: {quick_demo_note(sample.QUICK_REPETITIONS)}", err=True)


def _serving_extra() -> Any:
    """toolkit.serving.local, once the serving extra is known installed (UsageError else)."""
    from toolkit.errors import UsageError

    try:
        from toolkit.serving import local
    except ImportError as exc:  # httpx comes with the serving extra, not the base install
        raise UsageError(
            f"the serving demo needs the serving extra: {exc}",
            hint="pip install 'iteragpu-lab[serving]'",
        ) from None
    missing = local.missing_packages()
    if missing:
        raise UsageError(
            f"the serving demo starts transformers serve, which needs {', '.join(missing)}",
            hint="pip install 'iteragpu-lab[serving]'",
        )
    return local


def _serving_demo(
    ctx: click.Context,
    directory: Path,
    quick: bool,
    threads: int | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """`demo --task serving`: start `transformers serve` with the sample causal LM, build
    and lock the workbook for its endpoint, run the two-rate sweep, stop the server (its
    log stays beside the workbook), then report."""
    from toolkit.commands import demo as sample
    from toolkit.commands import demo_serving
    from toolkit.commands.report import report
    from toolkit.plumbing.shipped import SAMPLES, shipped
    from toolkit.runner.driver.campaign import Options

    local = _serving_extra()
    log = directory / demo_serving.SERVER_LOG
    click.echo(f"demo: starting transformers serve with the sample causal LM (log: {log})")
    with local.LocalServer(shipped(SAMPLES) / "causal_lm", log) as server:
        workbook = demo_serving.prepare(directory, server.base_url, server.model, quick)
        click.echo(f"demo workbook: {workbook} (endpoint {server.base_url})", err=as_json)
        _campaign(workbook, Options(threads=threads), quiet, as_json)
    click.echo(f"demo: transformers serve stopped; its log: {log}", err=as_json)
    if sample.stand_in_verification(workbook):
        click.echo(
            f"demo: Verification filled with the runner's accepted corpora, marked "
            f"'{sample.STAND_IN}' (in a real campaign you confirm them yourself)",
            err=as_json,
        )
    ctx.invoke(report, workbook=workbook, folder=None, no_png=False, as_json=as_json)


@click.command()
@WORKBOOK
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one iteralab-ingest/1 JSON document (docs/json.md).",
)
def ingest(workbook: Path, as_json: bool) -> None:
    """Add to WORKBOOK the attempts its journal holds and it lacks (idempotent).

    The runner writes each finished attempt to NAME.journal.jsonl first; this
    replays it after a crash or while the workbook was open elsewhere. Writes
    only Attempts and Manifest rows; Summary and Settlement change at `report`.
    """
    from toolkit import editing
    from toolkit.errors import WorkbookError
    from toolkit.evidence import journal, unfinished
    from toolkit.runner.lost import lost_line, record_lost_attempts

    path = journal.journal_path(workbook)
    if not workbook.exists():
        raise WorkbookError(f"{workbook}: no such workbook", hint="check the path")
    lost = record_lost_attempts(workbook)  # killed with their run: interrupted rows
    result = editing.ingest(workbook, refresh_derived=False)
    # Torn journal lines, then attempts still running (or that cannot be told here).
    for note in journal.notes(workbook) + [f.message for f in unfinished.findings(workbook)]:
        click.echo(f"note: {note}", err=True)
    if lost:
        click.echo(lost_line(lost), err=True)
    if as_json:
        from toolkit.commands import documents

        documents.emit(documents.ingest_document(workbook, path, result))
    else:
        click.echo(
            f"ingested {result.attempts_added} attempt(s) and {result.manifests_added} "
            f"manifest row(s) from {path.name}; {result.already} already in {workbook}"
        )
    _refuse_forged(path, result.refused)


def _say_refused(refused: dict[str, str]) -> None:
    """Each journal record refused (journal, attempt, why, what to do), one line each."""
    for message in refused.values():
        click.echo(f"refused: {message}", err=True)


def _refuse_forged(path: Path, refused: dict[str, str], *, said: bool = False) -> None:
    """Name each journal record refused (unless ``said`` already: `run` names them before it
    starts), then fail: the others are in the workbook."""
    from toolkit.errors import EvidenceInvalid

    if not said:
        _say_refused(refused)
    if refused:
        raise EvidenceInvalid(
            f"{path}: {len(refused)} record(s) not ingested (refused above); the "
            "others are in the workbook",
            hint="remove the refused lines from the journal, then `iteralab validate`",
        )


COMMANDS = [run, env, demo, ingest]


def _order_line(slots: list[Slot]) -> str:
    """The running order of the first three repetitions (``order b1-b4-b8 / b4-b8-b1 /
    b8-b1-b4 ...``); with several seeds each repetition's order runs once per seed, said
    once rather than repeated (R17)."""
    first_seed = slots[0].seed if slots else None
    repetitions = sorted({s.repetition for s in slots})
    order = " / ".join(
        "-".join(s.variant_id for s in slots if s.repetition == rep and s.seed == first_seed)
        for rep in repetitions[:3]
    )
    seeds = list(dict.fromkeys(s.seed for s in slots if s.seed is not None))
    return (
        f"order {order}"
        + (" ..." if len(repetitions) > 3 else "")
        + (f" (each once per seed: {', '.join(map(str, seeds))})" if len(seeds) > 1 else "")
    )
