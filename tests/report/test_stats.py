"""Five-run statistics and the discrimination verdict (R14-R15)."""

from __future__ import annotations

from decimal import Decimal

from toolkit.report import stats

B4 = [15.3, 15.9, 16.2, 15.6, 15.8]
B8 = [15.4, 14.9, 15.8, 15.2, 15.0]
B1 = [41.2, 40.8, 41.5, 40.9, 41.1]


def test_median_of_an_even_count_is_the_mean_of_the_two_middle_values() -> None:
    assert stats.median([15.4, 14.9, 15.8, 15.2]) == 15.3
    assert stats.median([3.0, 1.0, 2.0]) == 2.0


def test_median_min_and_max_of_nothing_are_none_never_zero() -> None:
    assert (stats.median([]), stats.minimum([]), stats.maximum([])) == (None, None, None)


def test_a_clean_split_of_five_runs_against_five_happens_by_chance_2_in_252() -> None:
    assert stats.chance_of_clean_split(5, 5) == 2 / 252
    assert stats.chance_of_clean_split(3, 3) == 0.1
    assert stats.chance_of_clean_split(0, 5) == 1.0


def test_four_runs_per_variant_is_the_fewest_that_can_separate() -> None:
    assert stats.runs_needed() == 4


def test_disjoint_ranges_of_five_runs_each_are_separated() -> None:
    s = stats.separation("b1-fp32", B1, "b4-fp32", B4)
    assert s.verdict == stats.SEPARATED
    assert s.faster == "b4-fp32"
    assert s.sentence() == (
        "b1-fp32 vs b4-fp32: separated (ranges apart, b4-fp32 faster by "
        "25.300 s at the median; 5 vs 5 runs, chance 0.8%)"
    )


def test_overlapping_ranges_are_not_separated_and_say_what_to_try() -> None:
    s = stats.separation("b4-fp32", B4, "b8-fp32", B8)
    assert s.verdict == stats.NOT_SEPARATED
    assert s.sentence() == (
        "b4-fp32 vs b8-fp32: not separated (ranges overlap: gap 0.600 s between medians, "
        "spread up to 0.900 s); add repetitions under the same protocol, or look at loading, "
        "input shape, compilation, concurrent activity"
    )


def test_touching_ranges_overlap() -> None:
    s = stats.separation("a", [1.0, 2.0, 3.0, 4.0, 5.0], "b", [5.0, 6.0, 7.0, 8.0, 9.0])
    assert s.verdict == stats.NOT_SEPARATED
    assert s.reason.startswith("ranges overlap")


def test_disjoint_ranges_from_too_few_runs_are_not_separated() -> None:
    s = stats.separation("a", [10.0, 11.0, 12.0], "b", [20.0, 21.0, 22.0])
    assert s.verdict == stats.NOT_SEPARATED
    assert s.sentence() == (
        "a vs b: not separated (ranges apart but only 3 vs 3 runs: chance 10% without a real "
        "difference); add repetitions under the same protocol (4 or more per variant make a "
        "clean split meaningful)"
    )


def test_a_variant_whose_runs_vary_widely_is_named() -> None:
    s = stats.separation("a", [10.0, 10.5, 13.0, 11.0, 10.2], "b", [10.8, 11.0, 11.2, 10.9, 11.1])
    assert s.advice.endswith("(a's runs spread 29% of its median)")


def test_a_variant_without_successful_runs_gives_no_data() -> None:
    s = stats.separation("b8-fp32", B8, "b16-fp32", [])
    assert s.verdict == stats.NO_DATA
    assert s.sentence() == (
        "b8-fp32 vs b16-fp32: no data (no successful run of b16-fp32); fix "
        "the failures, then measure again under the same protocol"
    )
    assert (s.gap_s, s.spread_s) == (None, None)


def test_costs_whose_ranges_do_not_meet_differ_beyond_the_noise() -> None:
    c = stats.cost_comparison(
        "b8-fp32", (Decimal(110), Decimal(110)), "b8-b200", (Decimal(2071), Decimal(2071))
    )
    assert c.verdict == stats.BEYOND_NOISE
    assert c.sentence() == (
        "b8-fp32 vs b8-b200: differ beyond the measurement noise (b8-fp32 "
        "cheaper than b8-b200 by at least 1,961.00 USD for the expected "
        "outputs; the runs' spread does not change either plan)"
    )


def test_equal_fixed_costs_are_the_same_cost() -> None:
    c = stats.cost_comparison(
        "b4", (Decimal(110), Decimal(110)), "b8", (Decimal(110), Decimal(110))
    )
    assert c.verdict == stats.SAME_COST


def test_overlapping_cost_ranges_are_within_the_noise() -> None:
    c = stats.cost_comparison("a", (Decimal(110), Decimal(470)), "b", (Decimal(235), Decimal(235)))
    assert c.verdict == stats.WITHIN_NOISE
    assert c.reason == (
        "budgets 110.00 USD-470.00 USD and 235.00 USD-235.00 USD overlap: "
        "which is cheaper depends on which run is typical"
    )


def test_a_missing_cost_gives_no_data() -> None:
    c = stats.cost_comparison("a", None, "b", (Decimal(1), Decimal(1)))
    assert (c.verdict, c.reason) == (stats.NO_DATA, "no cost for a")
