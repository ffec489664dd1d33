"""Equal quality is not the same labels: wherever a choice is stated (the memo's reasons and
its choice, report.md's equal-quality list), agreement with the reference stands beside the
quality verdict."""

from __future__ import annotations

from pathlib import Path

from tests.support.report_campaign import campaign
from toolkit.report import decision
from toolkit.report.refresh import refresh
from toolkit.report.summary import VariantStats


def test_the_memo_states_the_choice_s_agreement_with_the_reference(tmp_path: Path) -> None:
    data = campaign()
    done = refresh(data, tmp_path)
    chosen = next(st for st in done.stats if st.variant_id == "b8-fp32")
    assert chosen.reference_agreement is not None and chosen.reference_agreement < 1
    assert done.decision.suggestions["reasons"].startswith(
        "quality pass within the locked threshold and tolerance, agreement with the "
        f"reference {chosen.reference_agreement:.4f} (lowest over its runs); "
    )


def test_agreement_reads_as_words_when_not_measured() -> None:
    st = VariantStats("b1-fp32", 1, None)
    assert decision.agreement_text(st) == "agreement with the reference not measured"
    st.reference_agreement = 0.647
    assert decision.agreement_text(st) == (
        "agreement with the reference 0.6470 (lowest over its runs)"
    )


def test_gpus_params_alone_says_which_sizes_it_lacks_and_why() -> None:
    """`--params 70B` alone sizes only the weights: the refusal names the other sizes and the
    --need-gb way; the help says the same."""
    from click.testing import CliRunner

    from toolkit.cli import cli

    result = CliRunner().invoke(cli, ["gpus", "--params", "70B"])
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        "error: --params sizes the weights only: give --layers, --hidden-size, --heads as "
        "well (the KV cache and activations are sized from them), or --config PATH"
    )
    helped = " ".join(CliRunner().invoke(cli, ["gpus", "--help"]).output.split())
    assert "given with --layers, --hidden-size and --heads" in helped


def test_the_memo_says_no_corpus_is_confirmed_in_words_never_none() -> None:
    from toolkit.report.costs import Costing

    c = Costing(VariantStats("b1-fp32", 1, None), "rtx-4090", 1, "", None)
    assert decision.confirmed_text(c) == "no corpus confirmed yet in Verification"
    c.confirmed = 2
    assert decision.confirmed_text(c) == "2 distinct corpus(es) accepted and confirmed so far"
