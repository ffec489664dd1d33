"""What a valid protocol cannot answer, said before the lock, and a warm-up rule the runner
cannot apply found by validate (not at `check`, after the lock, when fixing it needs an amend).
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tests.support.builders import make_campaign, variant
from toolkit.cli import cli
from toolkit.report import protocol_warnings


def _book(tmp_path: Path, **protocol: object) -> Path:
    return make_campaign(
        tmp_path, 24, [variant("b1-fp32", 1), variant("b4-fp32", 4)], lock=False, **protocol
    )


def test_validate_finds_a_warmup_rule_the_runner_cannot_apply(tmp_path: Path) -> None:
    book = _book(tmp_path, warmup_rule="warm up a bit first")
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    assert result.exit_code == 1
    (found,) = [f for f in json.loads(result.stdout)["findings"] if f["column"] == "warmup_rule"]
    assert (found["sheet"], found["check"]) == ("Protocol", "warmup")
    assert found["message"].startswith(
        "Protocol warmup_rule 'warm up a bit first' is not a rule the runner can apply: write "
        "it as 'first 16 items once, not timed'"
    )
    refused = CliRunner().invoke(cli, ["lock", str(book)])
    assert refused.exit_code != 0 and "warmup_rule" in refused.output


def test_lock_warns_that_three_repetitions_never_separate_a_pair(tmp_path: Path) -> None:
    book = _book(tmp_path, repetitions=3, tolerance=0.5)
    result = CliRunner().invoke(cli, ["lock", str(book)])
    assert result.exit_code == 0, result.output
    assert (
        "warning: repetitions 3 can never separate two variants: 3 runs against 3 fall wholly "
        "apart by chance 10% of the time, above the separation rule's 5%; lock 4 or more "
        "repetitions to tell two variants apart"
    ) in result.stderr.splitlines()
    assert protocol_warnings.repetitions_warning(4) is None
    assert protocol_warnings.repetitions_warning(5) is None


def test_a_subgroup_too_small_for_the_tolerance_is_warned_at_validate_and_lock(
    tmp_path: Path,
) -> None:
    """24 items: persuasion holds 3 of them, so one flip moves its accuracy by 0.33."""
    book = _book(tmp_path, repetitions=5, tolerance=0.2, subgroups="label")
    result = CliRunner().invoke(cli, ["validate", str(book), "--json"])
    warnings = json.loads(result.stdout)["warnings"]
    assert all(w.startswith("subgroup label=") for w in warnings) and warnings
    small = [w for w in warnings if w.startswith("subgroup label=persuasion holds ")]
    assert small == [protocol_warnings.too_small("label=persuasion", int(small[0].split()[3]), 0.2)]
    locked = CliRunner().invoke(cli, ["lock", str(book)])
    assert locked.exit_code == 0, locked.output
    assert f"warning: {small[0]}" in locked.stderr.splitlines()
    # A tolerance a subgroup's single flip stays within: nothing to warn.
    assert (
        protocol_warnings.subgroup_warnings(
            {"tolerance": 0.99, "corpus_path": "corpus.jsonl", "subgroups": "label"}, book
        )
        == []
    )


def test_a_cpu_variant_naming_a_catalogued_gpu_is_a_finding_and_the_memo_says_cpu() -> None:
    """A CPU run priced as an RTX 4090 is named, and the draft memo never says it ran on one."""
    from tests.support.builders import filled
    from toolkit.money import tariffs
    from toolkit.planner.identity import gpu_findings
    from toolkit.report import decision
    from toolkit.report.costs import Costing
    from toolkit.report.summary import VariantStats

    data = filled()
    data.tables["Variants"][0]["gpu_slug"] = "rtx-4090"  # b1-fp32 runs on the cpu
    (finding,) = gpu_findings(data)
    assert (finding.sheet, finding.row, finding.column, finding.check) == (
        "Variants",
        2,
        "gpu_slug",
        "gpu-identity",
    )
    assert finding.message.startswith(
        "variant b1-fp32 runs on the cpu but names gpu_slug rtx-4090, a GPU of the catalog"
    )
    plan = tariffs.load_catalog().plan("rtx-4090", 7)
    stats = VariantStats("b1-fp32", 1, None)
    on_cpu = Costing(stats, "rtx-4090", 1, "", None, plan=plan, device="cpu")
    assert decision._label(on_cpu) == "b1-fp32 on the CPU (priced as RTX 4090, rtx-4090)"
    on_card = Costing(stats, "rtx-4090", 1, "", None, plan=plan, device="cuda")
    assert decision._label(on_card) == "b1-fp32 on RTX 4090 (rtx-4090)"
    # A priced CPU host (not a GPU of the catalog) is what a CPU variant may name.
    data.tables["Variants"][0]["gpu_slug"] = "demo-cpu-host"
    assert gpu_findings(data) == []
