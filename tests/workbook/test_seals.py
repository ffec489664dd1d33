"""A seal keeps every digest it was given, however many: each digest whole in one of the
formula's text literals (toolkit.workbook.seals)."""

from __future__ import annotations

from toolkit.workbook import seals


def test_every_digest_of_a_long_seal_is_read_back() -> None:
    digests = {seals.digest("b", i) for i in range(60)}
    formula = seals.formula(digests)
    assert formula is not None
    literals = formula.removeprefix("=").split("&")
    assert len(literals) == 3 and all(len(p) <= 255 for p in literals)
    assert seals.sealed(formula) == digests


def test_no_digest_no_seal_and_no_seal_nothing_sealed() -> None:
    assert seals.formula([]) is None
    assert seals.sealed(None) is None
    assert seals.sealed("") is None


def test_a_seal_past_a_formulas_length_is_not_written() -> None:
    assert seals.formula(seals.digest(i) for i in range(800)) is None
