"""Benchmark statistics: bootstrap intervals, ratio to the best, wins against HEFT, the paired test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dagsched.bench import stats


def run(problem: str, seed: int, scheduler: str, makespan: float, **extra: object) -> dict[str, object]:
    """A result row with the store's keys; only what the statistics read varies."""
    row: dict[str, object] = {
        "suite": "t",
        "family": "layered" if problem.startswith("P1") else "etl_star",
        "problem_id": problem,
        "n_tasks": 10,
        "n_edges": 12,
        "n_nodes": 3,
        "cluster": "c",
        "mode": "classic",
        "scheduler": scheduler,
        "seed": seed,
        "makespan": makespan,
        "cost": makespan / 10,
        "sla_hit_rate": 1.0,
        "utilisation": 0.5,
        "fragmentation": 0.3,
        "load_std": 0.1,
        "lower_bound": 4.0,
        "slr": makespan / 4.0,
        "decision_latency_mean_ms": 0.1,
        "decision_latency_p99_ms": 0.5,
        "decisions": 10,
        "valid": True,
        "wall_s": 0.01,
        "error": None,
    }
    row.update(extra)
    return row


# Three instances, three schedulers. Best per instance: 10, 16, 4.
#            P1/1   P1/2   P2/1
# heft        10     20      5      ratios 1, 1.25, 1.25   -> mean 7/6
# fcfs        12     16     10      ratios 1.2, 1, 2.5     -> mean 4.7/3
# sjf         10     25      4      ratios 1, 1.5625, 1    -> mean 3.5625/3
HAND = [
    run("P1", 1, "heft", 10),
    run("P1", 1, "fcfs", 12),
    run("P1", 1, "sjf", 10 * (1 + 1e-9)),  # within the tie tolerance
    run("P1", 2, "heft", 20),
    run("P1", 2, "fcfs", 16),
    run("P1", 2, "sjf", 25),
    run("P2", 1, "heft", 5),
    run("P2", 1, "fcfs", 10),
    run("P2", 1, "sjf", 4),
    # excluded: would be the best of P2/1 if counted, and an error on a problem nobody else ran
    run("P2", 1, "fcfs", 1, valid=False),
    run("P3", 1, "sjf", math.nan, error="RuntimeError: boom"),
]


def test_bootstrap_ci_of_a_normal_sample_covers_the_mean_with_the_textbook_width() -> None:
    """10,000 draws from N(5, 1): the 95% interval of the mean holds 5 and is about 2 x 1.96 / sqrt(n) wide."""
    x = np.random.default_rng(42).normal(5.0, 1.0, 10_000)
    low, high = stats.bootstrap_ci(x, seed=0)
    assert low < 5.0 < high
    assert high - low == pytest.approx(2 * 1.96 / math.sqrt(x.size), rel=0.1)
    assert (low + high) / 2 == pytest.approx(x.mean(), abs=0.005)


def test_bootstrap_ci_is_seeded_and_handles_degenerate_samples() -> None:
    """Same seed, same interval; a constant sample gives a point; one value gives itself; none gives nan."""
    x = np.random.default_rng(1).exponential(2.0, 50)
    assert stats.bootstrap_ci(x, seed=3) == stats.bootstrap_ci(x, seed=3)
    assert stats.bootstrap_ci(x, seed=3) != stats.bootstrap_ci(x, seed=4)
    assert stats.bootstrap_ci([7.0] * 20) == (7.0, 7.0)
    assert stats.bootstrap_ci([3.5]) == (3.5, 3.5)
    assert all(math.isnan(v) for v in stats.bootstrap_ci([]))
    low, high = stats.bootstrap_ci(x, stat=np.median, confidence=0.9)
    assert low <= float(np.median(x)) <= high


def test_ratio_to_best_uses_the_best_scheduler_present_on_each_instance() -> None:
    """ratio_best = makespan / min makespan over schedulers on the same (problem, mode, seed); bad rows ignored."""
    rows = stats.with_ratios(HAND)
    got = {(r["problem_id"], r["seed"], r["scheduler"]): r["ratio_best"] for r in rows}
    assert len(rows) == 9
    assert got[("P1", 1, "heft")] == 1.0
    assert got[("P1", 1, "fcfs")] == pytest.approx(1.2)
    assert got[("P1", 2, "heft")] == pytest.approx(1.25)
    assert got[("P1", 2, "sjf")] == pytest.approx(1.5625)
    assert got[("P2", 1, "fcfs")] == pytest.approx(2.5)  # not 10: the invalid run of 1 does not count
    assert got[("P2", 1, "sjf")] == 1.0


def test_win_tie_loss_against_heft() -> None:
    """Per instance: lower makespan wins, within 1e-6 relative ties, higher loses."""
    assert stats.win_tie_loss(HAND, "fcfs") == (1, 0, 2)
    assert stats.win_tie_loss(HAND, "sjf") == (1, 1, 1)
    assert stats.win_tie_loss(HAND, "heft") == (0, 3, 0)


def test_summary_table_sorts_by_mean_ratio_and_counts_excluded_rows() -> None:
    """One row per scheduler, best mean ratio first; error and invalid rows are counted, not averaged."""
    table = stats.summary_table(HAND)
    assert [e["scheduler"] for e in table] == ["heft", "sjf", "fcfs"]
    by = {e["scheduler"]: e for e in table}
    assert by["heft"]["ratio_best_mean"] == pytest.approx(3.5 / 3)
    assert by["sjf"]["ratio_best_mean"] == pytest.approx(3.5625 / 3)
    assert by["fcfs"]["ratio_best_mean"] == pytest.approx(4.7 / 3)
    assert (by["fcfs"]["n"], by["fcfs"]["excluded"]) == (3, 1)
    assert (by["sjf"]["n"], by["sjf"]["excluded"]) == (3, 1)
    assert (by["heft"]["n"], by["heft"]["excluded"]) == (3, 0)
    assert by["fcfs"]["makespan_mean"] == pytest.approx(38 / 3)  # 12, 16, 10: the invalid 1 is left out
    assert by["fcfs"]["makespan_median"] == 12
    assert by["heft"]["slr_mean"] == pytest.approx((10 + 20 + 5) / 3 / 4.0)
    assert by["fcfs"]["makespan_ci_low"] <= by["fcfs"]["makespan_mean"] <= by["fcfs"]["makespan_ci_high"]
    assert (by["sjf"]["wins"], by["sjf"]["ties"], by["sjf"]["losses"]) == (1, 1, 1)
    assert by["heft"]["wins"] is None and by["heft"]["p_value"] is None
    assert [r["reason"] for r in stats.excluded_rows(HAND)] == ["invalid trace", "RuntimeError: boom"]


def test_group_stats_by_family_pairs_within_the_family() -> None:
    """Per scheduler x family, the wins against HEFT count only that family's instances."""
    table = stats.group_stats(HAND, ("scheduler", "family"))
    by = {(e["scheduler"], e["family"]): e for e in table}
    assert (by[("fcfs", "layered")]["wins"], by[("fcfs", "layered")]["losses"]) == (1, 1)
    assert (by[("fcfs", "etl_star")]["wins"], by[("fcfs", "etl_star")]["losses"]) == (0, 1)
    assert by[("sjf", "etl_star")]["ratio_best_mean"] == 1.0
    fam = {e["scheduler"]: e for e in stats.family_ratio_table(HAND)}
    assert fam["fcfs"]["layered"] == pytest.approx(1.1)
    assert fam["fcfs"]["etl_star"] == pytest.approx(2.5)


def _paired(factor: float, n: int = 30) -> list[dict[str, object]]:
    rng = np.random.default_rng(7)
    rows = []
    for i in range(n):
        base = float(rng.uniform(10, 1000))  # instances of very different sizes
        rows.append(run(f"P{i}", 0, "heft", base))
        rows.append(run(f"P{i}", 0, "other", base * factor * float(rng.uniform(0.97, 1.0))))
    return rows


def test_wilcoxon_is_significant_for_a_clearly_better_scheduler() -> None:
    """A scheduler 10-13% faster on all 30 instances: p far below 0.01, negative median log ratio."""
    test = stats.wilcoxon_vs(_paired(0.9), "other")
    assert test["pairs"] == 30
    assert test["p_value"] is not None and test["p_value"] < 1e-6
    assert test["median_log_ratio"] is not None and test["median_log_ratio"] < math.log(0.91)


def test_wilcoxon_of_identical_schedulers_is_not_significant() -> None:
    """All differences zero: the test does not fail, p is 1; random signs give a large p."""
    rows = [dict(r, scheduler="twin") if r["scheduler"] == "other" else r for r in _paired(1.0)]
    rows = [r for r in rows if r["scheduler"] == "heft"] + [
        dict(r, scheduler="twin") for r in rows if r["scheduler"] == "heft"
    ]
    assert stats.wilcoxon_vs(rows, "twin") == {"pairs": 30, "p_value": 1.0, "median_log_ratio": 0.0}
    rng = np.random.default_rng(3)
    heft = rows[:30]
    noisy = [dict(r, scheduler="coin", makespan=r["makespan"] * math.exp(rng.normal(0, 0.05))) for r in heft]
    assert stats.wilcoxon_vs(heft + noisy, "coin")["p_value"] > 0.2
    assert stats.wilcoxon_vs(rows, "absent") == {"pairs": 0, "p_value": None, "median_log_ratio": None}


def test_performance_profile_counts_failed_runs_as_never_within_tau() -> None:
    """Dolan-Moré: fraction of the instances within tau (ties count as within); a failed run is never within.

    P3 has no valid run, so it is no instance: the denominator is 3 (P1/1, P1/2, P2/1).
    """
    profile = stats.performance_profile(HAND, [1.0, 1.3, 3.0])
    assert profile["heft"].tolist() == pytest.approx([1 / 3, 1.0, 1.0])
    assert profile["fcfs"].tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert profile["sjf"].tolist() == pytest.approx([2 / 3, 2 / 3, 1.0])
    # P4: heft completes, fcfs errors and sjf never ran: both stay below 1 at any tau
    more = [*HAND, run("P4", 1, "heft", 5.0), run("P4", 1, "fcfs", math.nan, error="timeout")]
    profile = stats.performance_profile(more, [1e9])
    assert (profile["heft"][0], profile["fcfs"][0], profile["sjf"][0]) == (1.0, 0.75, 0.75)


def test_format_markdown_shows_means_with_intervals() -> None:
    """The Markdown summary: a header, a rule, one line per scheduler, CI in brackets, W/T/L against HEFT."""
    md = stats.format_markdown(stats.summary_table(HAND))
    lines = md.strip().splitlines()
    assert len(lines) == 2 + 3
    assert lines[0].startswith("| scheduler | n | excluded | ratio to best, mean [95% CI]")
    assert lines[2].startswith("| heft | 3 | 0 | 1.167 [")
    assert "| 1/1/1 |" in lines[3]
    assert stats.format_markdown([]) == "_(no results)_\n"
    assert stats.format_markdown([{"a": 1.23456, "b": None}]) == "| a | b |\n| ---: | ---: |\n| 1.235 | – |\n"
