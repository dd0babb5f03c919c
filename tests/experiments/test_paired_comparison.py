"""Paired per-seed comparisons: pairing, the seed as the unit, tables."""

import random
import statistics

import pytest
from scipy import stats

from official_electra.experiments import paired_comparison
from official_electra.experiments import study_report


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
  assert row["bootstrap_95"] == pytest.approx([0.01, 0.01])
  assert row["t_95"] == pytest.approx([0.01, 0.01], abs=1e-12)
  # Five seeds won: the unit is the seed, not the ten (task, seed) pairs.
  assert (row["wins"], row["losses"], row["ties"]) == (5, 0, 0)
  assert row["sign_test_p"] == 0.0625
  assert row["unit"] == "fine-tuning seed"
  assert row["pretraining_runs"] == [1, 1]
  assert row["bootstrap_distinct_resamples"] == 126
  cola = row["tasks"]["CoLA"]
  assert cola["mean_difference"] == pytest.approx(0.01)
  assert (cola["wins"], cola["losses"], cola["ties"]) == (5, 0, 0)
  assert cola["sign_test_p"] == 0.0625


def test_every_test_is_over_seeds_per_task_and_over_the_task_mean():
  # Seed s: A - B is 1/16 + s/256 on MRPC and (s - 1)/64 on CoLA (exact
  # in binary, so seed 1's CoLA is a tie).
  runs = []
  for seed in range(5):
    runs += [_run("random_init", 0.0, "MRPC", seed, 0.5),
             _run("random_init", 0.0, "CoLA", seed, 0.125),
             _run("electra", 1.0, "MRPC", seed, 0.5 + 1 / 16 + seed / 256),
             _run("electra", 1.0, "CoLA", seed, 0.125 + (seed - 1) / 64)]
  (row,) = paired_comparison.paired_comparisons(runs, ["MRPC", "CoLA"])
  cola = [(seed - 1) / 64 for seed in range(5)]
  mrpc = [1 / 16 + seed / 256 for seed in range(5)]
  per_seed = [(m + c) / 2 for m, c in zip(mrpc, cola)]
  assert row["per_seed_mean_difference"] == pytest.approx(per_seed)
  for name, values in (("CoLA", cola), ("MRPC", mrpc)):
    task = row["tasks"][name]
    assert task["per_seed_mean_difference"] == pytest.approx(values)
    expected = stats.t.interval(0.95, 4, loc=statistics.fmean(values),
                                scale=stats.sem(values))
    assert task["t_95"] == pytest.approx(list(expected))
    assert task["t_degrees_of_freedom"] == 4
  # CoLA: one loss, one tie, three wins over the seeds.
  assert (row["tasks"]["CoLA"]["wins"], row["tasks"]["CoLA"]["losses"],
          row["tasks"]["CoLA"]["ties"]) == (3, 1, 1)
  assert row["tasks"]["CoLA"]["sign_test_p"] == pytest.approx(
      stats.binomtest(3, 4).pvalue)
  assert row["t_95"] == pytest.approx(list(stats.t.interval(
      0.95, 4, loc=statistics.fmean(per_seed), scale=stats.sem(per_seed))))
  # With one task left out, the mean is the other task's.
  assert row["mean_difference_without"] == {
      "MRPC": pytest.approx(statistics.fmean(cola)),
      "CoLA": pytest.approx(statistics.fmean(mrpc))}


def test_an_arm_of_two_pretraining_runs_widens_its_interval():
  # Two runs of A, each 0.02 apart on every seed; B has one run.
  seeds = range(5)
  b = {("MRPC", seed): 0.6 + 0.01 * (seed % 2) for seed in seeds}
  noise = [0.004, -0.002, 0.001, -0.003, 0.0]
  first = {key: score + 0.03 + noise[key[1]] for key, score in b.items()}
  second = {key: score + 0.05 + noise[key[1]] for key, score in b.items()}
  one_run = paired_comparison.compare([first], [b], ["MRPC"])
  pooled = paired_comparison.compare([first, second], [b], ["MRPC"])
  assert pooled["pretraining_runs"] == [2, 1]
  assert pooled["mean_difference"] == pytest.approx(0.04)
  # Averaged per seed, the runs' shift is common to every seed: the spread
  # over seeds (and the bootstrap) is the one run's; the t-interval is not.
  assert pooled["per_seed_mean_difference"] == pytest.approx(
      [0.04 + value for value in noise])
  width = lambda interval: interval[1] - interval[0]
  assert width(pooled["bootstrap_95"]) == pytest.approx(
      width(one_run["bootstrap_95"]))
  assert width(pooled["t_95"]) > 2 * width(one_run["t_95"])
  assert pooled["t_degrees_of_freedom"] < 4
  # Runs that agree add no width.
  agreeing = paired_comparison.compare([first, dict(first)], [b], ["MRPC"])
  assert agreeing["t_95"] == pytest.approx(one_run["t_95"])


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
  assert electra_vs_mlm["bootstrap_distinct_resamples"] == 10


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
  per_task, overall = table.split("Paired differences of the mean over tasks")
  assert "Paired differences per task" in per_task
  # Seeds 0-2: +2, +3, +4; t(2 df) = 4.303, sem = 1/sqrt(3).
  assert ("| electra (step 100) - random_init | SST-2 (accuracy) | 3 | +3.0 "
          "| [+0.5, +5.5] (df 2.0) | [+2.0, +4.0] | 3/0/0 | 0.25 |"
          ) in per_task
  assert ("mean over tasks (accuracy), paired diff | 95% t-interval | 95% "
          "bootstrap | wins/losses/ties (seeds) | sign test p |") in overall
  assert ("| electra (step 100) - random_init | 1 | 1e+12 | 3 | 1, 1 | +3.0 "
          "| [+0.5, +5.5] (df 2.0) | [+2.0, +4.0] | 3/0/0 | 0.25 |"
          ) in overall
  assert "10 distinct resamples" in overall


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
