"""The study's summary: medians and spread over seeds, task means, table."""

import json
import subprocess
import sys

import pytest

from official_electra.experiments import paired_comparison
from official_electra.experiments import study_report
from tests.training import tiny_pretraining


def _run(variant, step, task, seed, score, auc=None):
  return {"variant": variant, "step": step, "train_flops": step * 1e9,
          "fraction": step / 100, "task": task, "seed": seed,
          "metric": "matthews_corrcoef" if task == "CoLA" else "accuracy",
          "score": score, "pretraining": {} if auc is None else
          {"disc_auc": auc, "masked_lm_accuracy": 0.3}}


def test_median_spread_and_the_mean_of_the_task_medians():
  runs = [_run("electra", 100, "SST-2", seed, score, 0.8)
          for seed, score in enumerate((0.70, 0.80, 0.90))]
  runs += [_run("electra", 100, "CoLA", seed, score, 0.8)
           for seed, score in enumerate((0.10, 0.30, 0.20))]
  runs += [_run("random_init", 0, "SST-2", 0, 0.6)]
  rows = study_report.summarize(runs, ["SST-2", "CoLA"])
  assert [row["variant"] for row in rows] == ["random_init", "electra"]
  baseline, electra = rows
  assert electra["scores"]["SST-2"] == {"median": 0.80, "min": 0.70,
                                        "max": 0.90, "seeds": 3}
  assert electra["scores"]["CoLA"]["median"] == 0.20
  assert abs(electra["mean"] - 0.50) < 1e-12
  assert electra["disc_auc"] == 0.8
  # A task without a score yet leaves the mean empty, not a partial mean.
  assert baseline["mean"] is None


def test_a_seed_without_a_score_is_left_out_of_the_median():
  runs = [_run("mlm", 50, "CoLA", 0, None), _run("mlm", 50, "CoLA", 1, 0.4),
          _run("mlm", 50, "CoLA", 2, 0.2)]
  (row,) = study_report.summarize(runs, ["CoLA"])
  assert row["scores"]["CoLA"] == {"median": pytest.approx(0.3), "min": 0.2,
                                   "max": 0.4, "seeds": 2}


def test_the_table_shows_scores_times_100_with_their_spread():
  runs = [_run("electra", 100, "SST-2", seed, score, 0.75)
          for seed, score in enumerate((0.70, 0.80, 0.90))]
  results = {"tasks": ["SST-2"], "runs": runs, "num_seeds": 3,
             "summary": study_report.summarize(runs, ["SST-2"])}
  table = study_report.format_table(results)
  assert ("| variant | step | train FLOPs | SST-2 (accuracy) | mean of the "
          "task medians (accuracy) |") in table
  assert "| electra | 100 | 1e+11 | 80.0 [70.0, 90.0] | 80.0 | 0.750 |" in table
  assert "Median over 3 fine-tuning seeds [min, max]" in table


def test_a_table_mid_way_says_how_many_seeds_are_in():
  runs = [_run("electra", 100, "SST-2", seed, 0.8, 0.75) for seed in (0, 1)]
  runs += [_run("random_init", 0, "SST-2", 0, 0.6)]
  results = {"tasks": ["SST-2"], "runs": runs, "num_seeds": 5,
             "summary": study_report.summarize(runs, ["SST-2"])}
  table = study_report.format_table(results)
  assert "Median over 1-2 (of 5) fine-tuning seeds [min, max]" in table


def test_the_dev_and_the_selection_probes_get_their_own_tables():
  runs = [_run("electra", 100, "SST-2", 0, 0.8, 0.75)]

  def probes(score):
    return [{"variant": variant, "step": step, "train_flops": step * 1e9,
             "task": "SST-2", "feature": feature, "metric": "accuracy",
             "score": score + offset}
            for variant, step in (("random_init", 0), ("electra", 100))
            for feature, offset in (("first_token", 0.0), ("mean", 0.01))]
  results = {"tasks": ["SST-2"], "runs": runs, "num_seeds": 1,
             "summary": study_report.summarize(runs, ["SST-2"]),
             "probes": probes(0.6), "selection_probes": probes(0.7)}
  table = study_report.format_table(results)
  dev, selection = table.split("Selection probes")
  assert "Linear probes of the frozen encoders" in dev
  assert "| electra | 100 | 1e+11 | 60.0 / 61.0 |" in dev
  assert "| electra | 100 | 1e+11 | 70.0 / 71.0 | 70.50 |" in selection
  assert "| random_init | 0 | 0 | 70.0 / 71.0 | 70.50 |" in selection


def test_the_probe_mean_covers_every_task_and_feature_once_all_are_in():
  probes = [{"variant": "mlm", "step": 5, "train_flops": 5e9, "task": task,
             "feature": feature, "metric": "accuracy", "score": score}
            for task, feature, score in (
                ("SST-2", "first_token", 0.6), ("SST-2", "mean", 0.7),
                ("CoLA", "first_token", 0.1), ("CoLA", "mean", 0.2))]
  results = {"tasks": ["SST-2", "CoLA"], "selection_probes": probes}
  table = study_report.format_probe_table(results, "selection_probes")
  assert "| mlm | 5 | 5e+09 | 60.0 / 70.0 | 10.0 / 20.0 | 40.00 |" in table
  results["selection_probes"] = probes[:3]  # CoLA's mean feature missing
  table = study_report.format_probe_table(results, "selection_probes")
  assert "| mlm | 5 | 5e+09 | 60.0 / 70.0 |  |  |" in table


def test_a_sweep_without_fine_tuning_reports_its_probes_alone(tmp_path):
  probes = [{"variant": "electra", "step": 9, "train_flops": 9e9,
             "task": "SST-2", "feature": feature, "metric": "accuracy",
             "score": 0.5} for feature in ("first_token", "mean")]
  results = {"tasks": ["SST-2"], "runs": [], "num_seeds": 0, "summary": [],
             "paired": [], "probes": [], "selection_probes": probes}
  (tmp_path / study_report.FIGURE_FILE).write_bytes(b"stale")
  study_report.write_report(str(tmp_path), results)
  table = (tmp_path / study_report.TABLE_FILE).read_text()
  assert table.startswith("No fine-tuning runs")
  assert "fine-tuning seeds" not in table and "(?)" not in table
  assert "| electra | 9 | 9e+09 | 50.0 / 50.0 | 50.00 |" in table
  assert not (tmp_path / study_report.FIGURE_FILE).exists()


def test_the_figure_draws_the_paired_differences_beside_the_scores():
  # Two fractions of ELECTRA against random init; seed 2 of the smaller one
  # is not in yet.
  runs = [_run("random_init", 0, task, seed, 0.5)
          for task in ("SST-2", "CoLA") for seed in range(3)]
  runs += [_run("electra", step, task, seed, 0.5 + gain * (seed + 1))
           for step, gain in ((50, 0.01), (100, 0.02))
           for task in ("SST-2", "CoLA") for seed in range(3)
           if (step, seed) != (50, 2)]
  tasks = ["SST-2", "CoLA"]
  results = {"tasks": tasks, "runs": runs, "num_seeds": 3,
             "summary": study_report.summarize(runs, tasks),
             "paired": paired_comparison.paired_comparisons(runs, tasks)}
  series = study_report.paired_series(results["paired"])
  assert list(series) == ["electra - random init"]
  (small, large) = series["electra - random init"]
  # (FLOPs, mean difference, t-interval low, high), x 100, in FLOPs order.
  assert small[:2] == pytest.approx((50e9, 1.5))  # seeds 0-1: +1, +2
  assert large[:2] == pytest.approx((100e9, 4.0))  # seeds 0-2: +2, +4, +6
  # t(2 df) = 4.303 times the standard error 2/sqrt(3); t(1 df) = 12.706
  # times 0.5.
  assert large[2:] == pytest.approx((4.0 - 4.9683, 4.0 + 4.9683), abs=1e-3)
  assert small[2:] == pytest.approx((1.5 - 6.3531, 1.5 + 6.3531), abs=1e-3)
  figure = study_report.figure(results)
  scores, paired = figure.axes
  assert "median of 2-3 seeds" in scores.get_title()
  (bars,) = paired.containers
  line, _, (vertical,) = bars.lines
  assert list(line.get_xdata()) == [50e9, 100e9]
  assert list(line.get_ydata()) == pytest.approx([1.5, 4.0])
  assert "t-intervals" in paired.get_title()
  # Each bar spans the t-interval.
  spans = [segment[:, 1] for segment in vertical.get_segments()]
  assert [tuple(span) for span in spans] == [
      pytest.approx((point[2], point[3])) for point in (small, large)]
  png = study_report.plot(results)
  # Two panels of 6.4 inches at 100 dpi.
  assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") == 1280
  del results["paired"]
  assert len(study_report.figure(results).axes) == 1


def _mixed_record():
  runs = [_run(variant, step, task, seed, score + 0.01 * seed)
          for seed in range(3)
          for variant, step, gain in (("random_init", 0, 0.0),
                                      ("electra", 100, 0.02))
          for task, score in (("SST-2", 0.8 + gain), ("CoLA", 0.1 + gain))]
  return {"tasks": ["SST-2", "CoLA"], "runs": runs, "num_seeds": 3,
          "summary": [], "paired": [{"old": "statistics"}],
          "finetuning": {}, "encoder": {}}


def test_the_table_puts_tasks_and_baselines_before_means_and_names_the_mix():
  record = _mixed_record()
  results = study_report.redraw(record)
  results["baselines"] = {"SST-2": {"majority class": {"accuracy": 0.509,
                                                       "score": 0.509}},
                          "CoLA": {"majority class": {
                              "matthews_corrcoef": 0.0, "accuracy": 0.691,
                              "score": 0.0}}}
  table = study_report.format_table(results)
  assert ("mean of the task medians (mixes accuracy, matthews_corrcoef)"
          in table)
  assert "| baseline: majority class |  |  | 50.9 | 0.0 |  |  |  |" in table
  assert "| SST-2 | majority class | accuracy 50.9 |" in table
  assert (table.index("Paired differences per task")
          < table.index("Paired differences of the mean over tasks"))
  assert ("mean over tasks (mixes accuracy, matthews_corrcoef), paired diff"
          in table)


def test_a_record_is_drawn_again_from_its_runs(tmp_path):
  record = _mixed_record()
  results = study_report.redraw(record, ["CoLA"], source="record.json")
  (row,) = results["paired"]
  assert row["mean_difference"] == pytest.approx(0.02)
  assert (row["wins"], row["losses"]) == (3, 0)
  assert results["tasks"] == ["CoLA"] and results["baselines"] == {}
  assert {run["task"] for run in results["runs"]} == {"CoLA"}
  assert results["redrawn_from"] == "record.json"
  with pytest.raises(study_report.ReportError,
                     match="record.json: no runs of MRPC"):
    study_report.redraw(record, ["MRPC"], source="record.json")
  path = tmp_path / "record.json"
  path.write_text(json.dumps(record))
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.experiments.study_report",
       f"--results={path}", f"--output_dir={tmp_path / 'report'}"],
      capture_output=True, text=True, timeout=300,
      cwd=tiny_pretraining.REPO_ROOT, check=False)
  assert completed.returncode == 0, completed.stderr[-2000:]
  written = json.loads((tmp_path / "report" / "results.json").read_text())
  assert "runs" not in written and written["paired"][0]["seeds"] == [0, 1, 2]
  assert (tmp_path / "report" / "results.md").read_text().strip() == (
      completed.stdout.strip())
  assert (tmp_path / "report" / "results.png").read_bytes()[:4] == b"\x89PNG"
