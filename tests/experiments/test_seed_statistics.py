"""Seed-level statistics: the t quantile against SciPy's, the intervals'
widths and coverage, the two-level interval of replicated pretraining."""

import math
import statistics

import numpy as np
import pytest
from scipy import special
from scipy import stats

from official_electra.experiments import seed_statistics


@pytest.mark.parametrize("wins, losses", [(0, 0), (5, 0), (0, 5), (7, 3),
                                          (10, 10), (15, 4), (1, 19), (4, 1)])
def test_sign_test_is_the_exact_two_sided_binomial_test(wins, losses):
  expected = (1.0 if wins + losses == 0 else
              stats.binomtest(wins, wins + losses, 0.5).pvalue)
  assert seed_statistics.sign_test_p_value(wins, losses) == pytest.approx(
      expected, rel=1e-12)


def test_five_seeds_won_out_of_five_is_not_significant_at_five_percent():
  assert seed_statistics.sign_test_p_value(5, 0) == 0.0625
  assert seed_statistics.wins_losses_ties([0.1, -0.2, 0.0, 0.3]) == (2, 1, 1)


@pytest.mark.parametrize("a, b, x", [(0.5, 0.5, 0.3), (2.0, 3.0, 0.9),
                                     (100.0, 0.5, 0.99), (0.5, 50.0, 1e-3),
                                     (2.0, 0.5, 0.5), (1.0, 1.0, 0.25)])
def test_the_incomplete_beta_function_is_scipys(a, b, x):
  assert seed_statistics.regularized_incomplete_beta(a, b, x) == (
      pytest.approx(special.betainc(a, b, x), rel=1e-12, abs=1e-15))


@pytest.mark.parametrize("df", [1, 1.5, 2, 3.7, 4, 9, 30, 200, 1e4])
@pytest.mark.parametrize("probability", [0.975, 0.995, 0.6, 0.025])
def test_the_t_quantile_is_scipys(df, probability):
  assert seed_statistics.student_t_quantile(probability, df) == (
      pytest.approx(stats.t.ppf(probability, df), rel=1e-9))


def test_the_t_quantile_refuses_what_has_none():
  with pytest.raises(ValueError, match="probability"):
    seed_statistics.student_t_quantile(1.0, 4)
  with pytest.raises(ValueError, match="degrees of freedom"):
    seed_statistics.student_t_quantile(0.9, 0)


def test_the_t_interval_is_scipys_and_undefined_for_one_value():
  values = [0.0423, 0.0171, 0.0211, 0.0298, 0.0141]
  expected = stats.t.interval(0.95, len(values) - 1,
                              loc=np.mean(values), scale=stats.sem(values))
  assert seed_statistics.t_interval(values) == pytest.approx(list(expected),
                                                             rel=1e-9)
  assert seed_statistics.t_interval([0.1]) is None
  assert seed_statistics.t_interval([0.1, 0.1]) == [0.1, 0.1]


def test_five_seeds_have_126_resamples_and_a_narrower_bootstrap():
  assert seed_statistics.distinct_resamples(5) == 126
  assert seed_statistics.distinct_resamples(1) == 1
  assert seed_statistics.distinct_resamples(3) == len(
      {tuple(sorted((a, b, c))) for a in range(3) for b in range(3)
       for c in range(3)})
  # The study's ELECTRA - random init per seed (x 100): the bootstrap is
  # well inside the t-interval.
  values = [4.23, 1.71, 2.11, 2.98, 1.41]
  low, high = seed_statistics.bootstrap_interval(values)
  t_low, t_high = seed_statistics.t_interval(values)
  assert t_low < low < statistics.fmean(values) < high < t_high
  assert (high - low) < 0.7 * (t_high - t_low)


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible():
  values = [0.01, 0.03, -0.02, 0.05, 0.04]
  low, high = seed_statistics.bootstrap_interval(values)
  assert min(values) <= low < sum(values) / 5 < high <= max(values)
  assert seed_statistics.bootstrap_interval(values) == (low, high)
  wide = seed_statistics.bootstrap_interval([v * 10 for v in values])
  assert wide[1] - wide[0] == pytest.approx(10 * (high - low), rel=1e-9)
  assert seed_statistics.bootstrap_interval([0.2]) == (0.2, 0.2)
  with pytest.raises(ValueError):
    seed_statistics.bootstrap_interval([])


def test_two_level_interval_with_one_run_per_arm_is_the_t_interval():
  differences = [0.02, -0.01, 0.03, 0.015, 0.0]
  result = seed_statistics.two_level_interval(differences, [[0.6], [0.58]])
  assert result["interval"] == pytest.approx(
      seed_statistics.t_interval(differences))
  assert result["degrees_of_freedom"] == 4
  assert seed_statistics.two_level_interval([0.1], [[0.5, 0.6], [0.4]]) == {
      "interval": None, "degrees_of_freedom": None}


def test_two_level_interval_adds_the_runs_spread_with_satterthwaite_df():
  differences = [0.02, -0.01, 0.03, 0.015, 0.0]
  run_means = [0.60, 0.64]
  result = seed_statistics.two_level_interval(differences, [run_means,
                                                            [0.58]])
  seed_term = statistics.variance(differences) / 5
  run_term = statistics.variance(run_means) / 2
  df = (seed_term + run_term) ** 2 / (seed_term ** 2 / 4 + run_term ** 2 / 1)
  assert result["degrees_of_freedom"] == pytest.approx(df)
  half = stats.t.ppf(0.975, df) * math.sqrt(seed_term + run_term)
  mean = statistics.fmean(differences)
  assert result["interval"] == pytest.approx([mean - half, mean + half])
  # Runs that agree add nothing.
  same = seed_statistics.two_level_interval(differences, [[0.6, 0.6], [0.5]])
  assert same["interval"] == pytest.approx(
      seed_statistics.t_interval(differences))


def _simulated_coverage(trials, runs, seeds, run_spread, seed_spread, rng):
  """How often each interval holds the true difference (0.02) when A's
  pretraining runs each shift all of that run's seeds by a draw of
  `run_spread` and B (random init) has no pretraining run: the interval
  over seeds of the per-seed means against the two-level one."""
  truth = 0.02
  over_seeds = two_level = 0
  for _ in range(trials):
    seed_effects = rng.normal(0.0, seed_spread, seeds)
    run_effects = rng.normal(0.0, run_spread, runs)
    a = (0.5 + truth + run_effects[:, None] + seed_effects[None, :]
         + rng.normal(0.0, seed_spread, (runs, seeds)))
    b = 0.5 + seed_effects + rng.normal(0.0, seed_spread, seeds)
    differences = list(a.mean(axis=0) - b)
    low, high = seed_statistics.t_interval(differences)
    over_seeds += low <= truth <= high
    low, high = seed_statistics.two_level_interval(
        differences, [list(a.mean(axis=1)), [float(b.mean())]])["interval"]
    two_level += low <= truth <= high
  return over_seeds / trials, two_level / trials


def test_the_two_level_interval_covers_when_runs_differ_and_seeds_alone_do_not():
  rng = np.random.default_rng(0)
  # The runs' draw as large as the seeds' noise: averaging the runs per seed
  # and taking the spread over seeds misses it; the two-level interval holds.
  over_seeds, two_level = _simulated_coverage(
      800, runs=3, seeds=5, run_spread=0.02, seed_spread=0.01, rng=rng)
  assert over_seeds < 0.75
  assert two_level >= 0.93
  # Two runs whose draw dominates: the one degree of freedom of their
  # spread leaves the interval somewhat short of 95% (the docstring says
  # so), far above the seeds' alone.
  over_seeds, two_level = _simulated_coverage(
      800, runs=2, seeds=5, run_spread=0.02, seed_spread=0.01, rng=rng)
  assert over_seeds < 0.75
  assert two_level >= 0.87
  # No run-to-run spread: both hold their level (the two-level one wide).
  over_seeds, two_level = _simulated_coverage(
      800, runs=2, seeds=5, run_spread=0.0, seed_spread=0.01, rng=rng)
  assert over_seeds >= 0.92 and two_level >= 0.93
