"""Paired per-seed comparisons: sign test, bootstrap interval, pairing."""

import random

import pytest
from scipy import stats

from official_electra.experiments import paired_comparison
from official_electra.experiments import study_report


@pytest.mark.parametrize("wins, losses", [(0, 0), (5, 0), (0, 5), (7, 3),
                                          (10, 10), (15, 4), (1, 19)])
def test_sign_test_is_the_exact_two_sided_binomial_test(wins, losses):
  expected = (1.0 if wins + losses == 0 else
              stats.binomtest(wins, wins + losses, 0.5).pvalue)
  assert paired_comparison.sign_test_p_value(wins, losses) == pytest.approx(
      expected, rel=1e-12)


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible():
  values = [0.01, 0.03, -0.02, 0.05, 0.04]
  low, high = paired_comparison.bootstrap_interval(values)
  assert min(values) <= low < sum(values) / 5 < high <= max(values)
  assert paired_comparison.bootstrap_interval(values) == (low, high)
  # More spread, a wider interval; one value, no spread at all.
  wide = paired_comparison.bootstrap_interval([v * 10 for v in values])
  assert wide[1] - wide[0] == pytest.approx(10 * (high - low), rel=1e-9)
  assert paired_comparison.bootstrap_interval([0.2]) == (0.2, 0.2)
  with pytest.raises(ValueError):
    paired_comparison.bootstrap_interval([])


def _run(variant, fraction, task, seed, score, step=None):
  return {"variant": variant, "fraction": fraction,
          "step": step if step is not None else int(fraction * 100),
          "train_flops": fraction * 1e12, "task": task, "seed": seed,
          "score": score}


def test_pairing_by_seed_finds_a_gain_smaller_than_the_seed_spread():
  # Each seed moves every encoder's score by up to 10 points; the pretrained
  # encoder is 1 point better with every seed. Unpaired medians and ranges
  # overlap; the paired differences do not.
  rng = random.Random(0)
  runs = []
  for seed in range(5):
    for task in ("SST-2", "CoLA"):
      shift = rng.uniform(-0.05, 0.05)
      runs.append(_run("random_init", 0.0, task, seed, 0.6 + shift))
      runs.append(_run("electra", 1.0, task, seed, 0.61 + shift))
  (row,) = paired_comparison.paired_comparisons(runs, ["SST-2", "CoLA"])
  assert (row["a"], row["b"]) == ("electra", "random_init")
  assert row["mean_difference"] == pytest.approx(0.01)
  assert row["bootstrap_95"][0] == pytest.approx(0.01)
  assert row["bootstrap_95"][1] == pytest.approx(0.01)
  assert (row["wins"], row["losses"], row["ties"]) == (10, 0, 0)
  assert row["sign_test_p"] == pytest.approx(2 / 2 ** 10)
  assert row["tasks"]["CoLA"] == {"mean_difference": pytest.approx(0.01),
                                  "wins": 5, "losses": 0}


def test_objectives_are_compared_at_the_same_fraction_and_against_random():
  runs = []
  for seed, (random_init, electra, mlm) in enumerate(
      [(0.5, 0.7, 0.6), (0.6, 0.5, 0.7), (0.4, 0.6, 0.6)]):
    runs += [_run("random_init", 0.0, "MRPC", seed, random_init),
             _run("electra", 1.0, "MRPC", seed, electra, step=90),
             _run("mlm", 1.0, "MRPC", seed, mlm, step=100),
             _run("electra", 0.5, "MRPC", seed, electra - 0.1, step=45)]
  rows = paired_comparison.paired_comparisons(runs, ["MRPC"])
  pairs = [(row["a"], row["a_step"], row["b"], row["b_step"]) for row in rows]
  # MLM has no checkpoint at 0.5: no ELECTRA-MLM pair there.
  assert pairs == [("electra", 90, "random_init", 0),
                   ("mlm", 100, "random_init", 0),
                   ("electra", 90, "mlm", 100),
                   ("electra", 45, "random_init", 0)]
  electra_vs_mlm = rows[2]
  assert electra_vs_mlm["per_seed_mean_difference"] == pytest.approx(
      [0.1, -0.2, 0.0])
  assert (electra_vs_mlm["wins"], electra_vs_mlm["losses"],
          electra_vs_mlm["ties"]) == (1, 1, 1)
  assert electra_vs_mlm["sign_test_p"] == 1.0


def test_only_seeds_scored_on_every_task_by_both_are_paired():
  runs = [_run("random_init", 0.0, "SST-2", 0, 0.5),
          _run("random_init", 0.0, "CoLA", 0, 0.1),
          _run("random_init", 0.0, "SST-2", 1, 0.5),  # no CoLA for seed 1
          _run("electra", 1.0, "SST-2", 0, 0.7),
          _run("electra", 1.0, "CoLA", 0, 0.3),
          _run("electra", 1.0, "SST-2", 1, 0.9),
          _run("electra", 1.0, "CoLA", 1, 0.3),
          _run("electra", 1.0, "CoLA", 2, None)]
  (row,) = paired_comparison.paired_comparisons(runs, ["SST-2", "CoLA"])
  assert row["seeds"] == [0]
  assert row["mean_difference"] == pytest.approx(0.2)
  assert paired_comparison.paired_comparisons(runs[:3], ["SST-2"]) == []


def test_the_study_table_shows_the_paired_differences():
  runs = [dict(_run(variant, fraction, "SST-2", seed, score), metric="accuracy",
               pretraining={})
          for seed in range(3)
          for variant, fraction, score in (("random_init", 0.0, 0.70),
                                           ("electra", 1.0, 0.72 + seed / 100))]
  results = {"tasks": ["SST-2"], "runs": runs, "num_seeds": 3,
             "summary": study_report.summarize(runs, ["SST-2"]),
             "paired": paired_comparison.paired_comparisons(runs, ["SST-2"])}
  table = study_report.format_table(results)
  assert "Paired differences" in table
  assert ("| electra (step 100) - random_init | 1 | 1e+12 | 3 | +3.0 "
          "[+2.0, +4.0] | 3/0/0 | 0.25 | +3.0 |") in table


def test_objectives_pair_by_the_budget_fraction_their_settings_name():
  # ELECTRA's and MLM's kept steps are different fractions of their own
  # steps (2256/11278 against 2446/12231); both are the budget's 0.2.
  runs = []
  for seed in range(2):
    runs += [dict(_run("electra", 2256 / 11278, "SST-2", seed, 0.7,
                       step=2256), budget_fraction=0.2),
             dict(_run("mlm", 2446 / 12231, "SST-2", seed, 0.6, step=2446),
                  budget_fraction=0.2)]
  (row,) = paired_comparison.paired_comparisons(runs, ["SST-2"])
  assert (row["a"], row["a_step"], row["b"], row["b_step"], row["fraction"]) == (
      "electra", 2256, "mlm", 2446, 0.2)
