"""R1/R5 subgroups and strata: a user's corpus declares its own subgroups (any corpus field)
and its own length strata (Protocol stratum_bounds); a blank keeps the 32/128 of layouts 1-2,
and a declared field some record lacks is named, with its line, before any timing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.builders import attempts, filled, make_campaign, variant
from tests.support.paths import SAMPLES
from toolkit import layout
from toolkit.cli import cli
from toolkit.errors import ProtocolError
from toolkit.evidence import corpus, locking
from toolkit.evidence.validate import validate
from toolkit.findings import Finding
from toolkit.runner.tasks import evaluation
from toolkit.workbook import store

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`

BOUNDS_ROW = layout.PROTOCOL.names.index("stratum_bounds") + 2
SUBGROUPS_ROW = layout.PROTOCOL.names.index("subgroups") + 2


def _write(folder: Path, records: list[dict[str, object]], **protocol: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    data = filled()
    data.forms["Protocol"].update(protocol)
    path = folder / "campaign.xlsx"
    store.save(data, path)
    return path


GENRED = [
    {"id": "a", "text": "one", "label": "x", "genre": "letter"},
    {"id": "b", "text": "two", "label": "y"},
    {"id": "c", "text": "three", "label": "x", "genre": None},
    {"id": "d", "text": "four", "label": "y", "genre": "dialogue"},
]


# ------------------------------------------------------------------ stratum bounds


def test_the_strata_are_cut_by_the_protocol_s_bounds() -> None:
    bounds = corpus.parse_stratum_bounds("64, 256, 400")
    assert bounds == (64, 256, 400)
    assert [corpus.stratum(n, bounds) for n in (64, 65, 256, 257, 401)] == [
        "short",
        "medium-1",
        "medium-1",
        "medium-2",
        "long",
    ]
    assert corpus.strata_text({"short": 5, "long": 2}, corpus.parse_stratum_bounds("64")) == (
        "short 5 (1-64 tokens), long 2 (>=65 tokens)"
    )


def test_a_blank_stratum_bounds_is_the_32_128_of_older_workbooks() -> None:
    assert corpus.parse_stratum_bounds(None) == corpus.parse_stratum_bounds(" ") == (32, 128)
    assert layout.PROTOCOL.column("stratum_bounds").since == 3
    assert [corpus.stratum(n, corpus.parse_stratum_bounds(None)) for n in (32, 33, 129)] == [
        "short",
        "medium",
        "long",
    ]


def test_the_example_keeps_the_32_128_bounds() -> None:
    data = store.read(SAMPLES / "example_campaign.xlsx")
    value = data.forms["Protocol"]["stratum_bounds"]
    assert corpus.strata(corpus.parse_stratum_bounds(value)) == (
        ("short", 32),
        ("medium", 128),
        ("long", None),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "128, 32",
            "stratum_bounds '128, 32': the bounds are not strictly ascending: write each "
            "stratum's last token count in ascending order, e.g. '32, 128'",
        ),
        (
            "32, many",
            "stratum_bounds '32, many': 'many' is not a whole number of tokens >= 1: "
            "write ascending token counts, comma-separated, e.g. '32, 128' (blank means '32, 128')",
        ),
    ],
)
def test_stratum_bounds_that_cut_no_strata_are_a_finding(value: str, message: str) -> None:
    data = filled()
    data.forms["Protocol"]["stratum_bounds"] = value
    assert Finding("Protocol", BOUNDS_ROW, "stratum_bounds", "stratum-bounds", message) in validate(
        data
    )
    with pytest.raises(ProtocolError, match="cannot lock"):
        locking.lock(data)


# ------------------------------------------------------------------ subgroups from any field


def test_a_subgroup_may_be_any_corpus_field() -> None:
    rows = [
        {"id": str(i), "prediction": p, "label": g, "stratum": "short", "genre": genre}
        for i, (p, g, genre) in enumerate(
            [
                ("x", "x", "letter"),
                ("y", "x", "letter"),
                ("x", "x", "dialogue"),
                ("y", "y", "dialogue"),
            ]
        )
    ]
    kinds = evaluation.parse_subgroups("stratum, label, genre")
    assert evaluation.subgroups_text(evaluation.subgroup_metrics("accuracy", rows, kinds)) == (
        "stratum=short 0.7500 (n=4); label=x 0.6667 (n=3); label=y 1.0000 (n=1); "
        "genre=dialogue 1.0000 (n=2); genre=letter 0.5000 (n=2)"
    )


def test_a_field_subgroup_below_the_reference_fails_the_tolerance() -> None:
    reference_rows = [
        {
            "id": str(i),
            "prediction": "x",
            "label": "x",
            "stratum": "short",
            "genre": "letter" if i < 2 else "dialogue",
        }
        for i in range(4)
    ]
    rows = [
        dict(r, prediction="y" if r["genre"] == "letter" and r["id"] == "0" else "x")
        for r in reference_rows
    ]
    kinds = ("genre",)
    reference = evaluation.Reference(
        "ref",
        "a1",
        {r["id"]: "x" for r in reference_rows},
        1.0,
        evaluation.subgroup_metrics("accuracy", reference_rows, kinds),
    )
    result = evaluation.evaluate(
        rows,
        ["0", "1", "2", "3"],
        complete=True,
        metric_name="accuracy",
        threshold=0.5,
        tolerance=0.3,
        kinds=kinds,
        reference=reference,
        reference_variant="ref",
        variant_id="v",
    )
    assert result.verdict == "fail"
    # Two letters: one changed prediction moves the subgroup by 0.5, beyond the tolerance.
    assert (
        "subgroup genre=letter 0.5000 below reference 1.0000 - tolerance 0.3000 (2 items: one "
        "changed prediction moves it by 0.5000, more than the tolerance)"
    ) in result.notes


def test_a_declared_field_a_record_lacks_is_a_finding_naming_field_and_line(tmp_path: Path) -> None:
    book = _write(tmp_path, GENRED, subgroups="stratum, label, genre")
    assert Finding(
        "Protocol",
        SUBGROUPS_ROW,
        "subgroups",
        "subgroup-field",
        (
            "subgroups names 'genre', but the corpus corpus.jsonl line 2 (id 'b') and 1 more "
            "record(s) hold no usable 'genre' (absent, null, blank, or not text or a number): give "
            "every record its 'genre', or remove 'genre' from subgroups"
        ),
    ) in validate(store.read(book), book)


def test_lock_refuses_a_subgroup_field_the_corpus_lacks(tmp_path: Path) -> None:
    book = _write(tmp_path, GENRED, subgroups="stratum, label, genre")
    result = CliRunner().invoke(cli, ["lock", str(book)])
    assert result.exit_code == 1
    assert (
        f"Protocol!{SUBGROUPS_ROW} subgroups: subgroups names 'genre', but the corpus "
        "corpus.jsonl line 2 (id 'b')"
    ) in result.output


def test_a_subgroup_named_after_an_input_s_own_key_is_a_finding() -> None:
    data = filled()
    data.forms["Protocol"]["subgroups"] = "stratum, id"
    assert Finding(
        "Protocol",
        SUBGROUPS_ROW,
        "subgroups",
        "subgroups",
        (
            "subgroups 'stratum, id': 'id' cannot be a subgroup (each input has its own): name "
            "corpus fields shared by several inputs, e.g. 'stratum, label', or 'none'"
        ),
    ) in (validate(data))


def test_every_record_holding_the_field_validates_clean(tmp_path: Path) -> None:
    records = [dict(r, genre=r.get("genre") or "narration") for r in GENRED]
    book = _write(tmp_path, records, subgroups="stratum, label, genre")
    assert [f for f in validate(store.read(book), book) if f.sheet == "Protocol"] == []


# ------------------------------------------------------------------ the runner


def test_the_runner_cuts_the_protocol_s_strata_and_checks_a_field_subgroup(tmp_path: Path) -> None:
    book = make_campaign(
        tmp_path,
        16,
        [variant("b1-fp32", 8)],
        lock=False,
        subgroups="stratum, label, genre",
        stratum_bounds="64",
    )
    lines = (tmp_path / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:  # a field of the user's own: dialogue opens with a quote
        r["genre"] = "dialogue" if r["text"].startswith('"') else "narration"
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8"
    )
    data = store.read(book)
    locking.lock(data, book)
    store.save(data, book)
    result = CliRunner().invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code == 0, result.output
    (row,) = attempts(book)
    groups = [part.split(" ")[0] for part in row["subgroup_metrics"].split("; ")]
    assert [g for g in groups if g.startswith("stratum=")] == ["stratum=short", "stratum=long"]
    assert {g for g in groups if g.startswith("genre=")} == {"genre=dialogue", "genre=narration"}
    manifest = store.read(book).tables["Manifest"][0]
    assert manifest["strata"].endswith(
        f"(1-64 tokens), long {16 - int(manifest['strata'].split()[1])} (>=65 tokens)"
    )
    predictions = corpus.read_predictions(tmp_path / row["predictions_path"])
    assert {p["genre"] for p in predictions} == {"dialogue", "narration"}


def test_the_runner_refuses_a_corpus_whose_record_lacks_a_declared_field(tmp_path: Path) -> None:
    book = make_campaign(tmp_path, 4, [variant("b1-fp32", 4)], subgroups="stratum, label, genre")
    result = CliRunner().invoke(cli, ["run", str(book), "--quiet"])
    assert result.exit_code != 0
    assert "Protocol subgroups names 'genre', but corpus.jsonl line 1 (id " in result.output
    assert attempts(book) == []
