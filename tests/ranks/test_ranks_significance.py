"""The per-rank diagnosis names a family only when its evidence is significant
against step-to-step noise (issue 27): the tests' p-values checked against
closed forms and enumerations, the issue's false imbalance as a regression,
and the null calibration and power on generated tables.

Generated tables (seeded) look like a synchronous step: every rank computes,
then waits in the collective for the slowest one, so comm = 0.05 s base +
(slowest compute of the step − own compute) + a little noise; stall ~5 ms.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from effspec.ranks import imbalance, significance, stats
from effspec.ranks.diagnose import diagnose
from effspec.ranks.stats import RankStats
from effspec.ranks.table import RankTable


def table(compute: np.ndarray, rng: np.random.Generator | None = None, comm_base: float = 0.05,
          stall: float = 0.005) -> RankTable:
    R, S = compute.shape
    noise = np.abs(rng.normal(0, 0.002, (R, S))) if rng is not None else 0.0
    comm = comm_base + (compute.max(axis=0) - compute) + noise
    stalls = np.abs(rng.normal(stall, 0.001, (R, S))) if rng is not None else np.full((R, S), stall)
    rank = np.repeat(np.arange(R), S)
    step = np.tile(np.arange(S), R)
    return RankTable(rank, rank // 8, tuple(f"node{k:03d}" for k in range((R + 7) // 8)), step,
                     compute.ravel().astype(float), comm.ravel().astype(float), stalls.ravel().astype(float))


# -- the p-values, against closed forms and enumerations -------------------------------------


def chi2_sf_closed_form(x: float, df: int) -> float:
    """χ² survival in closed form: even df, e^{−x/2} Σ_{i<df/2} (x/2)^i / i!;
    odd df, erfc(√(x/2)) + e^{−x/2} Σ_{i=1}^{(df−1)/2} x^{i−1/2} / (2^{i−1/2} Γ(i+1/2))."""
    if df % 2 == 0:
        return math.exp(-x / 2) * sum((x / 2) ** i / math.factorial(i) for i in range(df // 2))
    return math.erfc(math.sqrt(x / 2)) + math.exp(-x / 2) * sum(
        (x / 2) ** (i - 0.5) / math.gamma(i + 0.5) for i in range(1, (df + 1) // 2))


@pytest.mark.parametrize("df", [1, 2, 3, 7, 10, 41])
@pytest.mark.parametrize("x", [0.3, 2.0, 7.0556, 18.0, 60.0])
def test_chi2_sf_matches_the_closed_form(df, x):
    assert significance.chi2_sf(x, df) == pytest.approx(chi2_sf_closed_form(x, df), rel=1e-9, abs=1e-300)


def test_chi2_sf_at_table_quantiles_and_its_inverse():
    # The printed χ² tables: 3.841 (df 1) and 18.475 (df 7) at 5 % and 1 %; 23.209 (df 10) at 1 %.
    assert significance.chi2_sf(3.841459, 1) == pytest.approx(0.05, abs=1e-7)
    assert significance.chi2_sf(18.475307, 7) == pytest.approx(0.01, abs=1e-8)
    assert significance.chi2_sf(23.209251, 10) == pytest.approx(0.01, abs=1e-8)
    assert significance.chi2_isf(0.01, 7) == pytest.approx(18.475307, rel=1e-7)
    # Large df (16,383 = 16,384 ranks − 1): the median of χ²_k is about k(1 − 2/(9k))³.
    k = 16383
    assert significance.chi2_sf(k * (1 - 2 / (9 * k)) ** 3, k) == pytest.approx(0.5, abs=1e-3)


def test_rank_sum_tail_is_exact():
    # k = 2 ranks, n = 3 steps: always the slower one, T = 6: (1/2)^3.
    assert significance.rank_sum_sf(6, 2, 3) == pytest.approx(1 / 8)
    # k = 3, n = 2: T ≥ 6 only for (3, 3): 1/9; T ≥ 5 for (3, 3), (2, 3), (3, 2): 3/9.
    assert significance.rank_sum_sf(6, 3, 2) == pytest.approx(1 / 9)
    assert significance.rank_sum_sf(5, 3, 2) == pytest.approx(3 / 9)
    assert significance.rank_sum_sf(4.5, 3, 2) == pytest.approx(3 / 9)  # a mid-rank sum rounds up
    # always the slowest of 8 ranks over 5 steps: 8^-5
    assert significance.rank_sum_sf(40, 8, 5) == pytest.approx(8.0 ** -5, rel=1e-9)
    # every value against enumeration of all 5^4 rank sequences (k = 5 ranks, n = 4 steps)
    sums = [sum(c) for c in itertools.product(range(1, 6), repeat=4)]
    for t in range(4, 21):
        assert significance.rank_sum_sf(t, 5, 4) == pytest.approx(sum(s >= t for s in sums) / 5 ** 4, abs=1e-12), t


def test_binomial_tail_midranks_and_friedman_by_hand():
    pb = significance.poisson_binomial_sf
    assert pb(2, [0.5] * 3) == pytest.approx(4 / 8)  # 3 + 1 of the 8 sequences
    assert pb(3, [0.01] * 60) == pytest.approx(  # equal probabilities: the binomial tail
        1 - sum(math.comb(60, j) * 0.01 ** j * 0.99 ** (60 - j) for j in range(3)), rel=1e-9)
    assert pb(2, [1 / 8, 1 / 4]) == pytest.approx(1 / 32) and pb(1, [1 / 8, 1 / 4]) == pytest.approx(1 - 7 / 8 * 3 / 4)
    assert pb(3, [0.5, 0.0, 0.5]) == 0.0 and pb(0, [0.1]) == 1.0
    # a tiny tail keeps its digits: 40 steps each bursting with probability 1/64, all 40: 64^-40
    assert pb(40, [1 / 64] * 40) == pytest.approx(64.0 ** -40, rel=1e-9)
    # against enumeration of all 2^6 outcomes, unequal probabilities
    probs = [0.05, 0.3, 0.125, 0.5, 0.9, 0.02]
    for c in range(8):
        exact = sum(math.prod(q if b else 1 - q for q, b in zip(probs, bits, strict=True))
                    for bits in itertools.product((0, 1), repeat=6) if sum(bits) >= c)
        assert pb(c, probs) == pytest.approx(exact, abs=1e-15), c
    ranks = significance.midranks(np.array([[1.0, 2.0], [1.0, 3.0], [0.0, 3.0]]))
    assert ranks.tolist() == [[2.5, 1.0], [2.5, 2.5], [1.0, 2.5]]
    # 3 ranks in a fixed order over 4 steps: rank sums 4, 8, 12; Q = 12/(4·3·4)·(16+64+144) − 3·4·4 = 8,
    # χ²_2 sf(8) = e^-4; Kendall's W = 8 / (4·2) = 1.
    f = significance.friedman(np.array([[1.0] * 4, [2.0] * 4, [3.0] * 4]))
    assert (f.statistic, f.df, f.steps, f.kendall_w) == (pytest.approx(8.0), 2, 4, pytest.approx(1.0))
    assert f.p == pytest.approx(math.exp(-4))
    # every step all tied: nothing to test
    assert significance.friedman(np.ones((4, 6))).p == 1.0


# -- the issue's example: 8 identical DP ranks, 6 steps --------------------------------------

# Each step's ranks (1 = fastest) of the 8 ranks; compute = 0.26 + 0.08 (rank − 1) / 7 s, so
# rank 0 ranges 0.26 to 0.34 s from step to step.  Rank sums 36, 18, 33, 21, 30, 24, 28, 26:
# per-rank mean compute 0.26 + 0.08/7 (sum/6 − 1) runs from 0.28286 (sum 18) to 0.31714 s (sum 36),
# a spread of 0.03429 / 0.31714 = 10.8 %, over the old 10 % threshold.
ISSUE_RANKS = np.array([
    [7, 4, 8, 1, 8, 8],
    [1, 1, 4, 6, 2, 4],
    [6, 6, 2, 8, 5, 6],
    [5, 3, 1, 7, 3, 2],
    [3, 2, 7, 5, 6, 7],
    [2, 8, 5, 3, 1, 5],
    [8, 7, 6, 2, 4, 1],
    [4, 5, 3, 4, 7, 3],
])


def issue_table() -> RankTable:
    return table(0.26 + 0.08 * (ISSUE_RANKS - 1) / 7, comm_base=0.01, stall=0.001)


def test_issue_example_is_balanced_within_noise_not_imbalance():
    t = issue_table()
    s = RankStats.of(t, None, None)
    assert s.spread == pytest.approx(0.03429 / 0.31714, abs=1e-4)
    assert imbalance.sized(s)  # the old rule (spread, wait) named imbalance here
    # Friedman by hand: n = 6, k = 8, mean rank sum n(k+1)/2 = 27; deviations ±9, ±6, ±3, ±1:
    # Σd² = 2(81 + 36 + 9 + 1) = 254; Q = 12 · 254 / (6 · 8 · 9) = 7.0556 on 7 df.
    q = 12 * 254 / (6 * 8 * 9)
    assert s.friedman.statistic == pytest.approx(q)
    p = chi2_sf_closed_form(q, 7)
    assert s.friedman.p == pytest.approx(p) and 0.4 < p < 0.45
    d = diagnose(t)
    assert (d.family, d.ranks, d.nodes) == ("none", (), ())
    assert d.reason.startswith(f"balanced within noise (p = {p:.2g} over 6 steps): per-rank mean compute spreads 11%")
    # Steps to detect: Q grows (Q − 7)/6 = 0.00926 per step; χ²_7 at 0.5 % is 20.278: (20.278 − 7)/0.00926.
    need = math.ceil((significance.chi2_isf(0.005, 7) - 7) / ((q - 7) / 6))
    assert f"about {need:,} steps would make a spread this large significant" in d.reason
    assert d.evidence["p_value"] == pytest.approx(p)
    assert d.evidence["effect_size"]["value"] == pytest.approx(q / (6 * 7))  # Kendall's W = Q / (n (k − 1))
    assert d.evidence["significance"]["imbalance"]["steps_to_detect"] == need
    assert "no MFU" in d.evidence["note"]


def test_alpha_is_configurable_and_a_fixed_order_is_imbalance():
    # With α = 100 % every test passes: the old verdict comes back.
    assert diagnose(issue_table(), alpha=1.0).family == "imbalance"
    # The same 8 values at every step, but each rank keeps its place (rank r always has rank r + 1):
    # W = 1, Q = n (k − 1) = 42, p = χ²_7 sf(42) = 5.2e-07: a significant imbalance.
    compute = 0.26 + 0.08 * np.repeat(np.arange(8)[:, None], 6, axis=1) / 7
    d = diagnose(table(compute, comm_base=0.01, stall=0.001))
    assert d.family == "imbalance"
    assert d.evidence["p_value"] == pytest.approx(chi2_sf_closed_form(42.0, 7))
    assert d.evidence["effect_size"]["value"] == pytest.approx(1.0)
    assert "the rank effect is significant (p = 5.2e-07 over 6 steps" in d.reason


# -- null calibration and power ---------------------------------------------------------------

ALPHA = stats.ALPHA


def balanced(rng: np.random.Generator, R: int, S: int, sigma: float) -> np.ndarray:
    """1.0 s compute, a step factor every rank shares (3 %), and per-rank noise σ (2 to 10 %)."""
    return (1 + 0.03 * rng.standard_normal(S))[None, :] * (1 + sigma * rng.standard_normal((R, S)))


def sizes(rng: np.random.Generator) -> tuple[int, int]:
    """8 to 1,024 ranks and 6 to 100 steps, log-uniform."""
    R = int(round(math.exp(rng.uniform(math.log(8), math.log(1024)))))
    S = int(round(math.exp(rng.uniform(math.log(6), math.log(100)))))
    return R, S


def test_null_calibration_names_a_family_in_at_most_alpha_of_balanced_tables():
    rng = np.random.default_rng(20261203)
    named = old_imbalance = friedman_rejects = 0
    for _ in range(1000):
        R, S = sizes(rng)
        d = diagnose(table(balanced(rng, R, S, rng.uniform(0.02, 0.10)), rng))
        e = d.evidence
        # the old rule, imbalance.sized(): spread ≥ 10 %, imbalance wait ≥ 5 % and ≥ half the wait
        old_imbalance += (e["compute_spread"] >= stats.IMBALANCE_SPREAD and e["imbalance_wait_share"] >= 0.05
                          and e["imbalance_wait_share"] >= 0.5 * e["wait_share"])
        friedman_rejects += e["significance"]["imbalance"]["p_value"] <= ALPHA / 2
        named += d.family != "none"
    # Measured (seed 20261203): 0 of 1,000 named; the old thresholds alone named imbalance in 148 of them
    # (spread ≥ 10 % and the wait dominant, as noise makes them), and the Friedman test alone rejects in 0
    # at α/2 = 0.5 % (the χ² reference is conservative at few steps).
    assert named <= ALPHA * 1000
    assert old_imbalance >= 100  # the tables are noisy enough to fool the old rule
    assert friedman_rejects <= ALPHA / 2 * 1000 + 5


@pytest.mark.parametrize("kind", ["straggler", "imbalance"])
def test_power_at_20_steps_names_the_injected_family(kind):
    """Straggler: one rank computes 20 % longer; imbalance: four contiguous groups (pipeline stages)
    compute 1.00, 0.95, 0.90, 0.85 of the time. Noise σ = 5 % per cell, 3 % per step, 20 steps."""
    rng = np.random.default_rng(7 if kind == "straggler" else 8)
    right = 0
    for _ in range(200):
        R = sizes(rng)[0]
        compute = balanced(rng, R, 20, 0.05)
        if kind == "straggler":
            slow = int(rng.integers(R))
            compute[slow] *= 1.2
        else:
            compute *= np.repeat([1.00, 0.95, 0.90, 0.85], -(-R // 4))[:R, None]
        d = diagnose(table(compute, rng))
        right += d.family == kind and (kind != "straggler" or d.ranks == (slow,))
    # Measured: 200 of 200 stragglers (the right rank), 199 of 200 imbalance: the miss is 9 ranks in 3 groups of
    # 3 (1.00, 0.95, 0.90), whose observed spread fell under the 10 % size threshold (family `none`).
    assert right >= 0.95 * 200


def test_alpha_is_a_key_of_the_ranks_block(tmp_path):
    """`ranks { alpha = … }` sets the diagnosis' α. 8 ranks in a fixed order (rank r computes
    0.26 + 0.08 r / 7 s) over 3 steps: rank sums R_j = 3 j, deviations 3 (j − 4.5), Σ D² = 9 · 42;
    Q = 12 · 378 / (3 · 8 · 9) = 21 on 7 df, p = χ²_7 sf(21) = 0.0038: under the default family level
    α/2 = 0.5 % (imbalance), over it with `alpha = 0.5 %` (family level 0.25 %): balanced within noise."""
    import effspec

    rows = ["rank,node,step,compute,comm,stall"]
    for step in range(3):
        for r in range(8):
            c = 0.26 + 0.08 * r / 7
            rows.append(f"{r},node0,{step},{c:.6f},{0.01 + 0.34 - c:.6f},0.001")
    (tmp_path / "ranks.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    p = chi2_sf_closed_form(21.0, 7)
    assert 0.0025 < p < 0.005
    found = {}
    for written in ("", "alpha = 0.5 %", "alpha = 0.9"):
        result = effspec.check_text(f'eff 1\nrun x {{\n  ranks {{ samples = file "ranks.csv"  {written} }}\n}}\n',
                                    file="a.eff", folder=str(tmp_path))
        d = result.evaluation.runs["x"].diagnosis if result.evaluation is not None else None
        found[written] = d, [(x.code, x.span.line, x.span.column) for x in result.diagnostics if x.code < "EFF100"]
    d, front = found[""]
    assert d.family == "imbalance" and d.evidence["p_value"] == pytest.approx(p) and front == []
    assert d.evidence["significance"]["alpha"] == 0.01
    d, front = found["alpha = 0.5 %"]
    assert d.family == "none" and d.reason.startswith(f"balanced within noise (p = {p:.2g} over 3 steps)")
    assert d.evidence["significance"]["alpha"] == pytest.approx(0.005) and front == []
    # α above 0.5 is refused at the value: line 3, column 47 (2 + len('ranks { samples = file "ranks.csv"  alpha = ')
    # = 2 + 44 characters before it)
    assert found["alpha = 0.9"][1] == [("EFF011", 3, 47)]


def test_text_and_sarif_carry_the_family_with_its_p_value_and_effect_size():
    """EFF406 (info) puts the diagnosis where text and SARIF readers look. Fixture: rank 5 computes
    1.30 s against 1.00 s, the slowest of 8 at each of 10 steps: p = 8^-10 × 40 tests (8 ranks × 5
    signals, Bonferroni) = 3.7e-08; effect: compute excess 1.30 / 1.00 − 1 = +30 %. And the issue's
    table (Friedman's p = 0.42, by hand above): balanced within noise over 6 steps."""
    from pathlib import Path

    import effspec
    from effspec.report.sarif import sarif_log
    from effspec.report.text import text

    result = effspec.load(Path(__file__).resolve().parents[1] / "fixtures" / "rules" / "EFF406" / "fail_named_and_within_noise.eff")
    p = 40 * 8.0 ** -10
    assert f"{p:.1e}" == "3.7e-08"
    named = ("run `slow_rank`: the per-rank timing is diagnosed `straggler` (rank 5 on node01; p = 3.7e-08; "
             "effect size: mean compute excess of rank 5 = +30.0%)")
    noise = f"run `noisy`: the per-rank timing is balanced within noise (p = {chi2_sf_closed_form(q_issue(), 7):.2g} over 6 steps)"
    printed = text(result)
    assert named in printed and noise in printed
    messages = [r["message"]["text"] for run in sarif_log([result])["runs"] for r in run["results"]
                if r["ruleId"] == "EFF406"]
    assert any(named in m for m in messages) and any(noise in m for m in messages)


def q_issue() -> float:
    """Friedman's Q of the issue's table: 12 Σd² / (n k (k + 1)) with Σd² = 254, n = 6, k = 8."""
    return 12 * 254 / (6 * 8 * 9)


def test_bursts_are_a_permutation_test_within_steps():
    """16 ranks, 40 steps, 1.0 s each; rank 9 computes 1.6 s at 5 steps (a burst: ≥ 50 % over the
    step's median) and no other rank ever bursts. Its mean excess is 5 × 0.6 / 40 = 7.5 %, under
    the 10 % of a consistent straggler: only the burst signal names it. Within each of those 5 steps
    one of 16 ranks bursts, so rank 9 does with probability 1/16, at no other step: p = 16^-5,
    × 80 tests (16 ranks × 5 signals, Bonferroni) = 7.6e-05."""
    compute = np.ones((16, 40))
    compute[9, [3, 11, 19, 27, 35]] = 1.6
    d = diagnose(table(compute))
    assert (d.family, d.ranks) == ("straggler", (9,))
    (s,) = d.evidence["stragglers"]
    assert s["pattern"] == "bursts" and s["p_value"] == pytest.approx(80 * 16.0 ** -5)
    # Bursts at 2 steps only: under the floor of 3 burst steps, nothing is named.
    compute[9, [19, 27, 35]] = 1.0
    assert diagnose(table(compute)).family == "none"


def test_the_report_row_gives_p_effect_and_steps_to_detect():
    """The report's per-rank section: the family's p and effect size on one row. The straggler example:
    rank 37 is the slowest of 64 at each of its 60 steps (counted in the CSV), so its exact tail 64^-60 is
    under the 1e-12 floor, and the corrected p is a bound: 1e-12 × 320 tests (64 ranks × 5) = 3.2e-10."""
    from pathlib import Path

    import effspec
    from effspec.report.sections import ranks

    result = effspec.load(Path(__file__).resolve().parents[2] / "examples" / "straggler_ranks.eff")
    rows = {r.label: r for r in ranks.diagnosis(result.evaluation.runs["llama7b_64"])[0]}
    assert rows["significance"].value == "p < 3.2e-10"
    assert "effect: mean compute excess of rank 37" in rows["significance"].note
    assert "α = 1% for the diagnosis, 0.5% per family" in rows["significance"].note
    # The issue's table, balanced within noise: the imbalance test's p, W and the steps that would detect it.
    d = diagnose(issue_table())
    ev = d.to_json()
    row = ranks.significance_row(ev)
    q = q_issue()
    assert row.value == f"p = {chi2_sf_closed_form(q, 7):.2g}"
    assert f"Kendall's W of per-step compute ranks = {q / 42:.3g}" in row.note
    assert f"about {ev['significance']['imbalance']['steps_to_detect']:,} steps would detect this spread" in row.note
