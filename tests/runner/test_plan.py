"""The campaign plan: rotation, resume, attempt ids, warm-up rule (toolkit.runner.plan)."""

from __future__ import annotations

import re

import pytest

from toolkit.errors import ProtocolError, UsageError
from toolkit.runner import plan


def _orders(slots: list[plan.Slot]) -> list[str]:
    reps = sorted({s.repetition for s in slots})
    return ["-".join(s.variant_id for s in slots if s.repetition == r) for r in reps]


def test_rotation_order_is_1_4_8_then_4_8_1_then_8_1_4() -> None:
    slots = plan.rotation(["1", "4", "8"], 5)
    assert _orders(slots) == ["1-4-8", "4-8-1", "8-1-4", "1-4-8", "4-8-1"]
    assert [s.position for s in slots[:3]] == [1, 2, 3]


def test_fixed_order_keeps_the_declared_order() -> None:
    assert _orders(plan.rotation(["1", "4"], 3, rotate=False)) == ["1-4", "1-4", "1-4"]


def test_each_variant_goes_first_as_often_as_the_others() -> None:
    slots = plan.rotation(["a", "b", "c"], 6)
    firsts = [s.variant_id for s in slots if s.position == 1]
    assert sorted(firsts) == ["a", "a", "b", "b", "c", "c"]


def test_pending_skips_completed_and_failed_but_reruns_interrupted() -> None:
    """A failure is a result (never retried silently); an interruption is not."""
    slots = plan.rotation(["1", "4"], 2)
    attempts = [
        {"variant_id": "1", "repetition": 1, "status": "completed"},
        {"variant_id": "4", "repetition": 1, "status": "failed"},
        {"variant_id": "4", "repetition": 2, "status": "interrupted"},
    ]
    assert plan.pending(slots, attempts) == [plan.Slot(2, 1, "4"), plan.Slot(2, 2, "1")]


def test_attempt_ids_are_readable_and_numbered() -> None:
    assert plan.attempt_id(7, plan.Slot(3, 1, "b8-fp32"), "5c1e") == "a007-b8-fp32-r3-5c1e"
    tags = {plan.run_tag() for _ in range(50)}
    assert all(re.fullmatch(r"[0-9a-f]{4}", t) for t in tags) and len(tags) > 40


VARIANTS = [
    {"variant_id": "b1", "series": 1},
    {"variant_id": "b4", "series": 1},
    {"variant_id": "bf", "series": 2},
]


def test_select_by_series_and_id_keeps_declared_order() -> None:
    assert [v["variant_id"] for v in plan.select(VARIANTS, series=1)] == ["b1", "b4"]
    assert [v["variant_id"] for v in plan.select(VARIANTS, variant_ids=("bf", "b1"))] == [
        "b1",
        "bf",
    ]


def test_select_refuses_unknown_ids_and_series() -> None:
    with pytest.raises(UsageError, match="variant\\(s\\) zz not declared"):
        plan.select(VARIANTS, variant_ids=("zz",))
    with pytest.raises(UsageError, match="no variant of series 9 is declared"):
        plan.select(VARIANTS, series=9)


@pytest.mark.parametrize(
    ("text", "items", "passes"),
    [
        ("first 16 items once, not timed", 16, 1),
        ("First 8 inputs, 3 times; recompilation counted in load", 8, 3),
        ("first 4 texts twice", 4, 2),
        ("none", 0, 0),
    ],
)
def test_warmup_rule_is_read_as_numbers(text: str, items: int, passes: int) -> None:
    rule = plan.parse_warmup(text)
    assert (rule.items, rule.passes, rule.text) == (items, passes, text)


def test_an_unreadable_warmup_rule_is_refused() -> None:
    with pytest.raises(ProtocolError, match="is not a rule the runner can apply"):
        plan.parse_warmup("warm up a bit")


def test_seeds_are_the_integers_of_the_field() -> None:
    assert plan.seeds("20250101, 7; x") == [20250101, 7]
    assert plan.seeds(None) == []


def test_the_run_line_shows_each_repetitions_order_once_whatever_the_seeds() -> None:
    """`iteralab run` prints the rotation; with two seeds each repetition runs its order
    twice, which the line says once instead of joining both runs into one order."""
    from toolkit.commands.runner import _order_line

    ids = ["b1", "b4", "b8"]
    assert _order_line(plan.rotation(ids, 5)) == "order b1-b4-b8 / b4-b8-b1 / b8-b1-b4 ..."
    assert _order_line(plan.rotation(ids, 2, seeds=[0, 7])) == (
        "order b1-b4-b8 / b4-b8-b1 (each once per seed: 0, 7)"
    )
    assert _order_line(plan.rotation(ids, 2, seeds=[0])) == "order b1-b4-b8 / b4-b8-b1"
