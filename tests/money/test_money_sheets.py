"""Rentals, Variants.rental_id and Verification rules (#16): each mistake a finding that names
its sheet, row and column; the constructed campaign validates clean."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.report_campaign import campaign
from toolkit.evidence.validate import sheet_findings
from toolkit.findings import Finding
from toolkit.workbook.model import WorkbookData

pytestmark = pytest.mark.campaign  # starts a campaign or a subprocess: not in `make test-fast`


def _findings(data: WorkbookData) -> list[tuple[str, int | None, str, str]]:
    return [(f.sheet, f.row, f.column, f.check) for f in sheet_findings(data)]


def _messages(data: WorkbookData, check: str) -> list[str]:
    return [f.message for f in sheet_findings(data) if f.check == check]


def test_the_campaign_with_rentals_and_verification_is_clean() -> None:
    assert sheet_findings(campaign()) == []


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"currency": "usd"}, ("Rentals", 2, "currency", "currency")),
        ({"currency": "DOLLARS"}, ("Rentals", 2, "currency", "currency")),
        ({"lots": 0}, ("Rentals", 2, "lots", "positive")),
        ({"amount": 0}, ("Rentals", 2, "amount", "zero")),
        ({"billing": "hourly"}, ("Rentals", 2, "amount", "metered")),
        ({"cards_per_lot": 2}, ("Rentals", 2, "cards_per_lot", "catalog")),
        ({"gpu_slug": "b200", "cards_per_lot": 2}, ("Rentals", 2, "gpu_slug", "same-gpu")),
        ({"end": "2026-12-06T09:00+01:00"}, ("Rentals", 2, "end", "order")),
        ({"billing": "monthly"}, ("Rentals", 2, "billing", "choice")),
    ],
)
def test_a_wrong_rental_row_is_a_finding(
    edit: dict[str, Any], expected: tuple[str, int, str, str]
) -> None:
    data = campaign()
    data.tables["Rentals"][0].update(edit)
    assert expected in _findings(data)


def test_a_variant_naming_no_rental_is_a_finding() -> None:
    data = campaign()
    data.tables["Variants"][1]["rental_id"] = "r-typo"
    assert ("Variants", 3, "rental_id", "exists") in _findings(data)
    [message] = _messages(data, "exists")
    assert message.startswith("rental 'r-typo' has no Rentals row")


def test_confirming_more_corpora_than_the_runner_accepted_is_a_finding() -> None:
    data = campaign()
    data.tables["Verification"][0]["confirmed_corpora"] = 3  # b1-fp32: one corpus accepted
    assert ("Verification", 2, "confirmed_corpora", "accepted") in _findings(data)
    assert _messages(data, "accepted") == [
        "3 corpus(es) confirmed, but the runner accepted 1 distinct corpus(es) of b1-fp32: only "
        "outputs that exist and passed can be confirmed"
    ]


def test_a_verification_says_who_when_and_what() -> None:
    data = campaign()
    data.tables["Verification"][0].update(verified_by=None, checked=None)
    found = [f for f in sheet_findings(data) if f.check == "verification"]
    assert found == [
        Finding(
            "Verification",
            2,
            "verified_by",
            "verification",
            "a verification says who checked, when, what, and how many "
            "corpora: fill verified_by, checked",
        )
    ]


def test_a_verification_of_an_undeclared_variant_is_a_finding() -> None:
    data = campaign()
    data.tables["Verification"][0]["variant_id"] = "b99"
    assert ("Verification", 2, "variant_id", "exists") in _findings(data)
