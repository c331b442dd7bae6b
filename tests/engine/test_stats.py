"""Step statistics: percentiles, stall share, predicted vs actual, the median's CI."""

from __future__ import annotations

import numpy as np
import pytest

import effspec
from effspec.engine import stats
from effspec.report.text import result_json

EXAMPLE_C_64 = (0.61, 0.60, 0.62, 0.60, 0.97, 0.60)


def test_example_c_statistics_by_hand():
    st = stats.step_statistics(EXAMPLE_C_64, 0)
    # sorted: 0.60 0.60 0.60 0.61 0.62 0.97 (n = 6)
    assert (st.count, st.rows, st.warmup_excluded) == (6, 6, 0)
    assert st.median == pytest.approx((0.60 + 0.61) / 2)  # 0.605
    assert st.mean == pytest.approx(4.00 / 6)
    # linear percentiles: rank k = (n − 1) p / 100
    assert st.p5 == pytest.approx(0.60)  # k = 0.25, between 0.60 and 0.60
    assert st.p95 == pytest.approx(0.62 + 0.75 * (0.97 - 0.62))  # k = 4.75 → 0.8825
    assert st.p99 == pytest.approx(0.62 + 0.95 * (0.97 - 0.62))  # k = 4.95 → 0.9525
    assert st.max == 0.97 and st.min == 0.60
    # stalls: slower than 1.5 × 0.605 = 0.9075 s → only 0.97; share 0.97 / 4.00 = 0.2425
    assert st.stall_threshold == pytest.approx(0.9075)
    assert st.stall_steps == 1
    assert st.stall_time_share == pytest.approx(0.97 / 4.00)
    # the median predicts 6 × 0.605 = 3.63 s; the run took 4.00 s
    assert st.predicted_time == pytest.approx(3.63)
    assert st.total_time == pytest.approx(4.00)
    assert st.unpredicted_time == pytest.approx(0.37)
    assert st.predicted_share == pytest.approx(3.63 / 4.00)
    # percentiles agree with numpy's default method
    assert st.p95 == pytest.approx(float(np.percentile(EXAMPLE_C_64, 95)))


def test_warmup_rows_are_excluded_and_counted():
    st = stats.step_statistics((9.0, 5.0, 1.0, 2.0, 3.0), 2)
    assert (st.rows, st.warmup_excluded, st.count) == (5, 2, 3)
    assert st.median == 2.0 and st.mean == pytest.approx(2.0)
    assert st.median_ci is None  # below 5 samples: no interval
    assert stats.step_statistics((1.0, 2.0), 2) is None


def test_bootstrap_is_seeded_and_brackets_the_median():
    values = [1.0 + 0.01 * i for i in range(40)]
    a = stats.bootstrap_median_ci(values)
    assert a == stats.bootstrap_median_ci(values)  # reproducible
    assert a[0] < stats.median(values) < a[1]
    st = stats.step_statistics(tuple(values), 0)
    assert st.median_ci == a and st.median_ci_method == "bootstrap"


def test_bootstrap_ci_coverage_on_synthetic_normal_data():
    # 200 seeded datasets of 41 N(10, 1) samples: the true median is 10.
    # A 95 % interval should cover it in roughly 95 % of datasets; accept 90–99 %.
    rng = np.random.default_rng(12345)
    covered = 0
    for i in range(200):
        data = rng.normal(10.0, 1.0, 41).tolist()
        lo, hi = stats.bootstrap_median_ci(data, resamples=1000, seed=i)
        covered += lo <= 10.0 <= hi
    assert 0.90 <= covered / 200 <= 0.99


def test_order_statistic_ci_for_many_samples():
    values = [float(i) for i in range(1001)]  # median 500
    # half-width in ranks: 1.96 × sqrt(1001) / 2 = 31.005; ranks floor(500.5 − 31.005) = 469
    # and ceil(500.5 + 31.005) − 1 = 531
    assert stats.order_statistic_median_ci(values) == (469.0, 531.0)
    st = stats.step_statistics(tuple(values), 0)
    assert st.median_ci_method == "order statistic" and st.median_ci == (469.0, 531.0)


def test_samples_from_csv_with_warmup_in_json(tmp_path):
    # 3 warm-up rows then 0.5, 0.6, 0.7, 0.8, 0.9: median 0.7, mean 0.7
    (tmp_path / "steps.csv").write_text("step,step_ms\n" + "".join(
        f"{i},{v}\n" for i, v in enumerate([3000, 2000, 1000, 500, 600, 700, 800, 900])))
    text = '''eff 1
run r {
  work { seq_len = 1000 token/sequence  global_batch = 7 sequence }
  timing { step_time = file "steps.csv" column "step_ms" ms  warmup = 3 step  boundary = "barrier" }
}
'''
    result = effspec.check_text(text, "t.eff", str(tmp_path))
    js = result_json(result)["runs"]["r"]["step_statistics"]
    assert (js["rows"], js["warmup_excluded"], js["count"]) == (8, 3, 5)
    assert js["median"] == pytest.approx(0.7) and js["mean"] == pytest.approx(0.7)
    assert js["origin"] == "file" and js["source"] == "steps.csv, column step_ms"
    # 7000 valid tokens / 0.7 s = 10,000 token/s
    assert result.evaluation.runs["r"].metrics["valid_tokens_per_second"].value == pytest.approx(10000.0)


def test_row_medians_are_numpys_medians_to_the_bit():
    # The bootstrap's sort-based medians against np.median: odd and even counts, ties, and
    # values whose two middle ones sum inexactly (the halving must be the float np.median gives).
    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 4, 5, 10, 11, 12, 40, 41):
        for data in (rng.normal(4.2, 0.05, (300, n)), rng.integers(0, 3, (300, n)).astype(float),
                     rng.uniform(1e-3, 0.1, (300, n)) * 10.0 ** rng.integers(-5, 5, (300, 1))):
            ours = stats._row_medians(data)
            assert ours.tobytes() == np.median(data, axis=1).tobytes(), n


def test_bootstrap_draws_as_a_fresh_generator_would():
    # The cached indices are the generator's own draws: the interval is the one a fresh
    # np.random.default_rng(seed) and np.median give, cached or not, for small and large counts.
    def fresh(values, resamples, seed):
        rng = np.random.default_rng(seed)
        data = np.asarray(values, dtype=float)
        n = len(data)
        batch = max(1, min(resamples, 2_000_000 // n))
        medians = np.empty(resamples)
        for start in range(0, resamples, batch):
            stop = min(resamples, start + batch)
            medians[start:stop] = np.median(data[rng.integers(0, n, size=(stop - start, n))], axis=1)
        lo, hi = np.quantile(medians, [0.025, 0.975])
        return float(lo), float(hi)

    rng = np.random.default_rng(3)
    for n, resamples in ((10, 2000), (10, 2000), (11, 500), (65, 2000), (1000, 2000)):
        values = rng.lognormal(0.0, 0.2, n).tolist()
        assert stats.bootstrap_median_ci(values, resamples, seed=n) == fresh(values, resamples, n)
