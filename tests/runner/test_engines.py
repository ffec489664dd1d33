"""Engines other than torch, real and on the CPU: an onnxruntime export of the sample
classifier against the torch reference, its dynamic-int8 quantization gated like any
precision, and ``python:`` predictors, the shipped TF-IDF plugin and broken ones.

Each campaign is the first 24 rows of the sample corpus (tests/support/builders.py); the ONNX
export (about 20-40 s on two busy cores) is built once for the module's campaign.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import SAMPLES, attempts, make_campaign, unexplained, variant
from tests.support.paths import FIXTURES
from toolkit.cli import cli
from toolkit.evidence import journal
from toolkit.plumbing import engines
from toolkit.runner.engines import cache
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

pytest.importorskip("onnxruntime")

ONNX_FP32 = variant("ort-fp32", 4, series=2, engine="onnxruntime")
ONNX_INT8 = variant("ort-int8", 4, series=2, engine="onnxruntime", quantization="dynamic-int8")
TFIDF = variant(
    "tfidf",
    4,
    series=2,
    engine="python:austen_tfidf:Predictor",
    model_path="austen_tfidf",
    head_path=None,
)


def _run(book: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "2", *args])
    assert result.exit_code == 0, result.output
    return result.output


def _rows(book: Path) -> dict[str, dict[str, object]]:
    return {str(r["variant_id"]): r for r in attempts(book)}


def _manifest(book: Path, row: dict[str, object]) -> dict[str, object]:
    (found,) = [
        m for m in store.read(book).tables["Manifest"] if m["manifest_id"] == row["manifest_id"]
    ]
    return found


@pytest.fixture(scope="module")
def engines_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """torch fp32 (the reference) then onnxruntime fp32, onnxruntime int8 and the TF-IDF
    plugin, batch 4, one attempt each, over the first 24 rows: the workbook and what `run`
    printed."""
    folder = tmp_path_factory.mktemp("engines")
    shutil.copytree(
        SAMPLES / "austen_tfidf",
        folder / "austen_tfidf",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    book = make_campaign(folder, 24, [variant("b1-fp32", 4), ONNX_FP32, ONNX_INT8, TFIDF])
    return book, _run(book)


@pytest.fixture(scope="module")
def engines_campaign(engines_run: tuple[Path, str]) -> Path:
    return engines_run[0]


def _preflight_loaded(output: str, variant_id: str, engine: str) -> bool:
    """Whether `run`'s pre-flight (before any attempt) loaded the variant's model through
    its engine and ran a batch."""
    return any(
        line.startswith(f"  {variant_id}: {engine}; loaded in ") for line in output.splitlines()
    )


def test_onnxruntime_fp32_agrees_with_the_torch_reference(engines_run: tuple[Path, str]) -> None:
    engines_campaign, output = engines_run
    row = _rows(engines_campaign)["ort-fp32"]
    assert unexplained(row) == []
    assert (row["status"], row["ids_match"], row["quality_verdict"], row["corpus_accepted"]) == (
        "completed",
        "yes",
        "pass",
        "yes",
    )
    assert row["reference_agreement"] == 1.0  # every label as torch fp32's
    assert row["metric_value"] == _rows(engines_campaign)["b1-fp32"]["metric_value"]
    assert row["padded_tokens"] == _rows(engines_campaign)["b1-fp32"]["padded_tokens"]
    # `run`'s pre-flight loads the variant through its engine before any attempt, so the
    # export is built there and the attempt's load phase reuses it.
    assert _preflight_loaded(output, "ort-fp32", "onnxruntime, cpu, fp32")
    assert "onnx export (fp32) reused from engine_cache/onnxruntime/" in str(row["notes"])


def test_the_manifest_names_the_onnx_file_providers_and_version(engines_campaign: Path) -> None:
    import onnxruntime

    row = _rows(engines_campaign)["ort-fp32"]
    manifest = _manifest(engines_campaign, row)
    assert manifest["engine"] == f"onnxruntime {onnxruntime.__version__}"
    exported = list(
        (engines_campaign.parent / cache.CACHE_FOLDER / "onnxruntime").glob("*/model.onnx")
    )
    shas = {cache.sha256_of(p) for p in exported}
    assert len(shas) == 2  # the fp32 export and its int8 quantization
    artifact = str(manifest["engine_artifact"])
    assert artifact.startswith("onnx sha256 ") and artifact.split()[2].rstrip(";") in shas
    assert "providers CPUExecutionProvider" in artifact and "intra-op threads 2" in artifact
    torch_manifest = _manifest(engines_campaign, _rows(engines_campaign)["b1-fp32"])
    assert (torch_manifest["engine"], torch_manifest["engine_artifact"]) == ("torch", None)


def test_int8_is_gated_by_the_protocol_tolerance(engines_run: tuple[Path, str]) -> None:
    engines_campaign, output = engines_run
    rows = _rows(engines_campaign)
    row, reference = rows["ort-int8"], rows["b1-fp32"]
    assert row["status"] == "completed" and row["ids_match"] == "yes"
    assert _preflight_loaded(output, "ort-int8", "onnxruntime, cpu, fp32, dynamic-int8")
    assert "onnxruntime dynamic-int8 quantization reused from engine_cache/onnxruntime/" in str(
        row["notes"]
    )
    # The verdict follows the Protocol's rule (accuracy and each subgroup within 0.01 of the
    # reference's), whichever way int8 falls: a failure names what fell below.
    below = float(row["metric_value"]) + 1e-9 < float(reference["metric_value"]) - 0.01
    failures = "below reference" in str(row["notes"])
    assert below <= failures
    assert row["quality_verdict"] == ("fail" if failures else "pass")
    assert row["corpus_accepted"] == ("no" if failures else "yes")


def test_the_tfidf_plugin_runs_through_the_same_phases(engines_campaign: Path) -> None:
    row = _rows(engines_campaign)["tfidf"]
    assert unexplained(row) == []
    assert (row["status"], row["items_completed"], row["ids_match"]) == ("completed", 24, "yes")
    for name in ("load_s", "warmup_s", "measured_s", "evaluation_s", "export_s"):
        assert isinstance(row[name], float) and row[name] > 0, name
    assert row["host_rss_peak_bytes"] > 0
    assert row["padded_tokens_reason"].startswith("a python: predictor reads text")
    assert row["subgroup_metrics"].startswith("stratum=")  # the reference's strata
    manifest = _manifest(engines_campaign, row)
    assert manifest["engine"] == "python not an installed distribution"
    assert "austen_tfidf.Predictor; module files __init__.py " in str(manifest["engine_artifact"])
    assert manifest["tokenizer_revision"].startswith("none: a python: predictor")
    expected = [p["label"] for p in _plugin_predictions(engines_campaign.parent, 24)]
    predictions = [
        json.loads(line)
        for line in (engines_campaign.parent / str(row["predictions_path"]))
        .read_text()
        .splitlines()
    ]
    assert [p["prediction"] for p in predictions] == expected


def _plugin_predictions(folder: Path, items: int) -> list[dict[str, str]]:
    """The shipped plugin's own labels for the first ``items`` rows, called directly."""
    spec = importlib.util.spec_from_file_location(
        "austen_tfidf_direct", folder / "austen_tfidf" / "__init__.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    records = [
        json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines()[:items]
    ]
    return module.Predictor({}, folder / "austen_tfidf").predict(
        [{"id": r["id"], "text": r["text"]} for r in records]
    )


def test_a_later_attempt_reuses_the_cached_export(engines_campaign: Path) -> None:
    from toolkit.runner.engines import onnx

    classifier = onnx.load({**ONNX_FP32, "head_path": "head"}, engines_campaign.parent)
    assert classifier.engine_notes[0].startswith(
        "onnx export (fp32) reused from engine_cache/onnxruntime/"
    )
    first = _manifest(engines_campaign, _rows(engines_campaign)["ort-fp32"])
    assert (
        str(classifier.engine_artifact).split(";")[0] == str(first["engine_artifact"]).split(";")[0]
    )  # the same ONNX file


def test_a_conversion_built_at_load_says_so_in_the_notes(
    engines_campaign: Path, tmp_path: Path
) -> None:
    """Where no pre-flight built the conversion (an attempt on a Ray cluster, a cache
    removed since), the load phase builds it and the notes say how long it took."""
    from toolkit.runner.engines import onnx

    cached = engines_campaign.parent / cache.CACHE_FOLDER / "onnxruntime"
    (fp32,) = [
        f
        for f in cached.iterdir()
        if (f / "settings.json").is_file()
        and json.loads((f / "settings.json").read_text())["quantization"] == "none"
    ]
    shutil.copytree(fp32, tmp_path / cache.CACHE_FOLDER / "onnxruntime" / fp32.name)
    shutil.copytree(engines_campaign.parent / "head", tmp_path / "head")
    classifier = onnx.load(ONNX_INT8, tmp_path)  # the fp32 export reused, int8 built
    try:
        reused, built = classifier.engine_notes[:2]
    finally:
        classifier.close()
    assert reused == f"onnx export (fp32) reused from engine_cache/onnxruntime/{fp32.name}"
    assert re.fullmatch(
        r"onnxruntime dynamic-int8 quantization built in \d+\.\d s \(first use, inside "
        r"load_s\): engine_cache/onnxruntime/[0-9a-f]{16}",
        built,
    ), built


BROKEN = """
class Raises:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        raise RuntimeError("the model server is down")

class OneShort:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        return [{"id": r["id"], "label": "emma"} for r in records[:-1]]

class Foreign:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        return [{"id": "not-in-the-corpus", "label": "emma"}] + [
            {"id": r["id"], "label": "emma"} for r in records[1:]]

class TypeErrs:
    def __init__(self, variant, folder):
        pass
    def predict(self, records):
        return len(records) + " labels"

class KeyErrs:
    def __init__(self, variant, folder):
        self.labels = {}
    def predict(self, records):
        first = self.labels[records[0]["id"]]
        return [{"id": r["id"], "label": first} for r in records]

class BuildFails:
    def __init__(self, variant, folder):
        self.vocabulary = variant["vocabulary"]
    def predict(self, records):
        return []

class TypeErrInWindow:
    def __init__(self, variant, folder):
        self.calls = 0
    def predict(self, records):
        self.calls += 1
        # The cold pass's two batches and the warm-up's one pass; the measured window's not.
        if self.calls > 3:
            return sorted(records)
        return [{"id": r["id"], "label": "emma"} for r in records]
"""


def _line(text: str) -> int:
    """The line of BROKEN (as written to broken_predictors.py) that holds ``text``."""
    (number,) = [n for n, line in enumerate(BROKEN.splitlines(), 1) if text in line]
    return number


#: Each broken predictor: what the pre-flight says of its one batch, what an attempt that
#: meets it records (repetition 1 meets it in the load phase's cold pass).
BROKEN_CASES = [
    (
        "Raises",
        "python:broken_predictors:Raises raised RuntimeError: the model server is down "
        f"(at broken_predictors.py:{_line('raise RuntimeError')}, in predict)",
        "failed during load: RuntimeError: the model server is down",
    ),
    (
        "TypeErrs",
        "python:broken_predictors:TypeErrs raised TypeError: unsupported operand type(s) for +: "
        f"'int' and 'str' (at broken_predictors.py:{_line('len(records) +')}, in predict)",
        "failed during load: TypeError: unsupported operand type(s) for +: 'int' and 'str'",
    ),
    (
        "KeyErrs",
        "python:broken_predictors:KeyErrs raised KeyError: 'emma-c1-p48' "
        f"(at broken_predictors.py:{_line('self.labels[')}, in predict)",
        "failed during load: KeyError: 'emma-c1-p48'",
    ),
    (
        "BuildFails",
        "python:broken_predictors:BuildFails raised KeyError: 'vocabulary' "
        f"(at broken_predictors.py:{_line('variant[')}, in __init__)",
        "failed during load: KeyError: 'vocabulary'",
    ),
    (
        "OneShort",
        "predict() returned 3 output(s) for a batch of 4",
        "predict() returned 3 output(s) for a batch of 4",
    ),
    (
        "Foreign",
        "predict() returned id 'not-in-the-corpus', which is not in its batch",
        "predict() returned id 'not-in-the-corpus', which is not in its batch",
    ),
]


def _broken_campaign(folder: Path, name: str) -> Path:
    (folder / "broken_predictors.py").write_text(BROKEN, encoding="utf-8")
    return make_campaign(
        folder,
        8,
        [
            variant(
                "broken",
                4,
                engine=f"python:broken_predictors:{name}",
                model_path="head",
                head_path=None,
            )
        ],
        reference_variant="broken",
    )


@pytest.mark.parametrize(("name", "said", "reason"), BROKEN_CASES)
def test_run_s_preflight_stops_a_broken_predictor_before_any_attempt(
    tmp_path: Path, name: str, said: str, reason: str
) -> None:
    book = _broken_campaign(tmp_path, name)
    result = CliRunner().invoke(cli, ["run", str(book), "--threads", "2"])
    assert result.exit_code == 1, result.output
    assert "pre-flight: 1 problem(s); no attempt was run or recorded" in result.stderr
    assert f"variant broken: {said}" in result.stderr
    assert "Traceback" not in result.output
    assert not journal.journal_path(book).exists()
    assert store.read(book).tables["Attempts"] == []


@pytest.mark.usefixtures("no_preflight")
@pytest.mark.parametrize(("name", "said", "reason"), BROKEN_CASES)
def test_a_broken_predictor_is_a_failed_row_with_its_reason(
    tmp_path: Path, name: str, said: str, reason: str
) -> None:
    """Where no pre-flight ran first (an attempt on a Ray cluster), the attempt that meets
    the broken predictor is a failed row saying why."""
    book = _broken_campaign(tmp_path, name)
    _run(book)
    (row,) = attempts(book)
    assert (row["status"], row["corpus_accepted"]) == ("failed", "no")
    assert reason in str(row["notes"])
    assert unexplained(row) == []


@pytest.mark.usefixtures("no_preflight")
def test_a_predictor_raising_in_the_measured_window_is_a_failed_row(tmp_path: Path) -> None:
    """Any exception of the user's code in the measured window (here a TypeError after a
    warm-up that passed) is a failed row with its type and message, not a crash."""
    book = _broken_campaign(tmp_path, "TypeErrInWindow")
    _run(book)
    (row,) = attempts(book)
    assert (row["status"], row["corpus_accepted"], row["measured_s"]) == ("failed", "no", None)
    assert row["warmup_s"] is not None
    assert (
        "failed after 0 of 8 items: TypeError: '<' not supported between instances of 'dict' "
        "and 'dict'" in str(row["notes"])
    ), row["notes"]
    assert unexplained(row) == []


def test_an_engine_not_installed_is_a_validate_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = make_campaign(tmp_path, 8, [variant("b1-fp32", 4), ONNX_FP32], lock=False)
    real = engines.version
    monkeypatch.setattr(engines, "version", lambda d: None if d == "onnxruntime" else real(d))
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    findings = json.loads(result.output)["findings"]
    assert [f for f in findings if f["column"] == "engine"] == [
        {
            "sheet": "Variants",
            "row": 3,
            "column": "engine",
            "check": "engine",
            "message": "ort-fp32: engine onnxruntime is not installed here (onnxruntime "
            "missing): pip install 'iteragpu-lab[onnx]'",
        }
    ]


def test_an_engine_for_the_other_task_is_a_validate_finding(tmp_path: Path) -> None:
    book = make_campaign(
        tmp_path,
        8,
        [variant("b1-fp32", 4), variant("ct2", 4, series=2, engine="ctranslate2")],
        lock=False,
    )
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    messages = [
        f["message"] for f in json.loads(result.output)["findings"] if f["column"] == "engine"
    ]
    assert messages == [
        "ct2: engine ctranslate2 does not run the classification task: "
        "ctranslate2 runs generation; use torch for classification"
    ]


def test_a_layout_3_workbook_reads_as_torch() -> None:
    from toolkit.evidence.validate import work_differences

    data = store.read(FIXTURES / "layout3_campaign" / "example_campaign.xlsx")
    assert data.layout_version == 3
    rows = data.tables["Variants"]
    assert {r["engine"] for r in rows} == {None}  # the column is newer than the workbook
    assert {engines.engine_of(r) for r in rows} == {"torch"}
    assert work_differences(rows[0], {**rows[0], "engine": "torch"}) == []
    assert work_differences(rows[0], {**rows[0], "engine": "onnxruntime"}) == ["engine"]


def test_env_lists_the_engines_with_their_versions() -> None:
    import onnxruntime

    result = CliRunner().invoke(cli, ["env"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("engine ")]
    assert lines[0].startswith("engine torch ")
    assert f"engine onnxruntime onnxruntime {onnxruntime.__version__}, onnx " in lines[1]
    assert lines[-1].startswith("engine python: a predictor of your own")


def test_the_demo_runs_the_example_s_declared_engine_series(tmp_path: Path) -> None:
    """Series 4 is locked in the committed example (no amendment); a plain demo runs it
    with series 1, and its copy holds the plugin the series names."""
    from toolkit.commands import demo
    from toolkit.evidence.validate import validate

    book = demo.prepare(tmp_path / "d")
    data = store.read(book)
    series = [
        (v["variant_id"], v["series"], v["engine"], v["base_variant"], v["changes"])
        for v in data.tables["Variants"]
    ][-3:]
    assert series == [
        ("b8-ort-fp32", 4, "onnxruntime", "b8-fp32", "engine"),
        ("b8-ort-int8", 4, "onnxruntime", "b8-fp32", "engine, quantization"),
        (
            "b8-tfidf",
            4,
            "python:austen_tfidf:Predictor",
            "b8-fp32",
            "engine, model_path, head_path",
        ),
    ]
    assert (tmp_path / "d" / "austen_tfidf" / "model.json").is_file()
    assert [a["action"] for a in data.tables["Audit"]] == ["lock"]
    assert validate(data, book) == []
    assert demo.plain_variants(book, "classification") == (
        "b1-fp32",
        "b4-fp32",
        "b8-fp32",
        "b8-ort-fp32",
        "b8-ort-int8",
        "b8-tfidf",
    )
