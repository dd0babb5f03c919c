"""The size report: ELECTRA - MLM and each against random init, per size."""

import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

from official_electra import files
from official_electra.experiments import size_report
from official_electra.modeling import encoder_config
from tests.training import tiny_pretraining

TASKS = ("SST-2", "MRPC")


def _study(folder, hidden_size, gap, variant_order, tasks=TASKS,
           task_gaps=None, learning_rate=1e-3, random_init_decay=None):
  """A finished study's results.json whose ELECTRA beats MLM by `gap` on
  every seed and task (`task_gaps[task]` instead, when given; plus noise
  shared by the pair), MLM random init by 0.02."""
  rng = np.random.default_rng(hidden_size)
  runs = []
  for seed in range(5):
    for task in tasks:
      shared = float(rng.normal(0.0, 0.05))
      task_gap = gap if task_gaps is None else task_gaps[task]
      scores = {"random_init": 0.5 + shared, "mlm": 0.52 + shared,
                "electra": 0.52 + task_gap + shared}
      for variant in variant_order:
        runs.append({"variant": variant, "step": 0 if variant ==
                     "random_init" else 100, "fraction": 0.0 if variant ==
                     "random_init" else 1.0, "budget_fraction": 0.0 if
                     variant == "random_init" else 1.0,
                     "train_flops": 0.0 if variant == "random_init" else 1e12,
                     "task": task, "seed": seed, "score": scores[variant]})
  encoder = encoder_config.EncoderConfig(
      vocab_size=100, embedding_size=16, hidden_size=hidden_size,
      num_layers=2, num_attention_heads=2, intermediate_size=4 * hidden_size,
      max_position_embeddings=32)
  files.makedirs(str(folder))
  # The record's own paired rows are of older statistics, which the report
  # must not read: it computes them again from the runs.
  files.write_json(str(folder / "results.json"), {
      "tasks": list(tasks), "num_seeds": 5,
      "finetuning": {"learning_rate": learning_rate},
      "encoder": dataclasses.asdict(encoder), "runs": runs,
      "paired": [{"a": "electra", "b": "mlm", "mean_difference": 9.0}],
      **({} if random_init_decay is None else {"random_init_finetuning": {
          "learning_rate": learning_rate,
          "layerwise_decay_rate": random_init_decay}})})
  return folder


def test_the_gap_per_size_with_its_interval_whichever_order_the_study_used(
    tmp_path):
  small = _study(tmp_path / "small", 32, 0.06,
                 ("random_init", "electra", "mlm"))
  # This study compared MLM - ELECTRA: the report flips it.
  large = _study(tmp_path / "large", 64, 0.01,
                 ("random_init", "mlm", "electra"))
  rows = size_report.size_rows([str(large), str(small)], "electra", "mlm")
  assert [row["study"] for row in rows] == [str(small), str(large)]
  assert rows[0]["parameters"] < rows[1]["parameters"]
  for row, gap in zip(rows, (0.06, 0.01)):
    comparison = row["comparisons"]["electra-mlm"]
    assert comparison["mean_difference"] == pytest.approx(gap)
    for interval in ("bootstrap_95", "t_95"):
      low, high = comparison[interval]
      assert low - 1e-9 <= gap <= high + 1e-9
    # Over the five seeds, not the ten (task, seed) pairs.
    assert (comparison["wins"], comparison["losses"]) == (5, 0)
    assert comparison["sign_test_p"] == 0.0625
    assert comparison["tasks"]["MRPC"]["mean_difference"] == (
        pytest.approx(gap))
    assert row["comparisons"]["mlm-random_init"]["mean_difference"] == (
        pytest.approx(0.02))
    assert row["comparisons"]["electra-random_init"]["mean_difference"] == (
        pytest.approx(0.02 + gap))
    # Each arm's median over the seeds, per task and their mean.
    runs = json.loads(open(row["study"] + "/results.json").read())["runs"]
    for variant in ("electra", "mlm", "random_init"):
      medians = row["medians"][variant]
      for task in TASKS:
        assert medians[task] == pytest.approx(float(np.median(
            [run["score"] for run in runs
             if run["variant"] == variant and run["task"] == task])))
      assert medians["mean"] == pytest.approx(
          np.mean([medians[task] for task in TASKS]))
    assert row["medians"]["electra"]["mean"] == pytest.approx(
        row["medians"]["mlm"]["mean"] + gap)
  table = size_report.format_table(rows)
  assert (f"| 32 x 2 | {rows[0]['parameters']:,} | 1e+12 | +6.0 [+6.0, "
          "+6.0], 5/0/0, p 0.0625 |") in table
  assert "+1.0 [+1.0, +1.0], 5/0/0, p 0.0625" in table
  electra_small = rows[0]["medians"]["electra"]
  assert (f"| 32 x 2 | electra | {100 * electra_small['SST-2']:.1f} | "
          f"{100 * electra_small['MRPC']:.1f} | "
          f"{100 * electra_small['mean']:.1f} |") in table
  # The medians come before the paired tables, per task before the mean.
  assert table.index("median over the seeds") < table.index(
      "Paired differences per task") < table.index(
          "Paired differences of the mean over tasks")
  with_baselines = size_report.format_table(rows, {"MRPC": {
      "majority class": {"accuracy": 0.684, "score": 0.684}}})
  assert "| any | baseline: majority class | - | 68.4 | |" in with_baselines
  # Whichever order the study took them in, the row is A - B, per task too.
  row = size_report.paired_row(
      json.loads((large / "results.json").read_text()), "electra", "mlm",
      str(large))
  assert (row["a"], row["b"]) == ("electra", "mlm")
  for difference in row["tasks"].values():
    assert difference["mean_difference"] == pytest.approx(0.01)
    assert (difference["wins"], difference["losses"]) == (5, 0)

  output_dir = tmp_path / "report"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.experiments.size_report",
       f"--studies={small},{large}", f"--output_dir={output_dir}"],
      capture_output=True, text=True, cwd=tiny_pretraining.REPO_ROOT,
      check=False)
  assert completed.returncode == 0, completed.stderr[-2000:]
  written = json.loads((output_dir / size_report.RESULTS_FILE).read_text())
  assert len(written["sizes"]) == 2
  assert (output_dir / size_report.FIGURE_FILE).read_bytes()[:4] == (
      b"\x89PNG")
  assert (output_dir / size_report.TABLE_FILE).read_text() == table


def test_a_study_without_the_pair_or_results_is_one_line(tmp_path):
  study = _study(tmp_path / "study", 32, 0.01, ("random_init", "electra",
                                                "mlm"))
  with pytest.raises(size_report.SizeReportError,
                     match="no runs of both electra and electra_spans"):
    size_report.size_rows([str(study)], "electra", "electra_spans")
  with pytest.raises(size_report.SizeReportError, match="no such file"):
    size_report.size_rows([str(tmp_path / "missing")], "electra", "mlm")


def test_studies_of_other_tasks_compare_on_the_tasks_they_share(tmp_path):
  # The small study has ELECTRA ahead on SST-2 only; the large one was
  # fine-tuned on MRPC alone.
  small = _study(tmp_path / "small", 32, None,
                 ("random_init", "electra", "mlm"),
                 task_gaps={"SST-2": 0.08, "MRPC": 0.0})
  large = _study(tmp_path / "large", 64, 0.03,
                 ("random_init", "electra", "mlm"), tasks=("MRPC",))
  with pytest.raises(size_report.SizeReportError,
                     match=r"large/results.json: its tasks is \['MRPC'\], .*"
                           r"pass --tasks that every study has"):
    size_report.size_rows([str(small), str(large)], "electra", "mlm")
  with pytest.raises(size_report.SizeReportError,
                     match=r"large/results.json: no runs of SST-2 "):
    size_report.size_rows([str(small), str(large)], "electra", "mlm",
                          ["SST-2"])
  rows = size_report.size_rows([str(small), str(large)], "electra", "mlm",
                               ["MRPC"])
  gaps = [row["comparisons"]["electra-mlm"]["mean_difference"]
          for row in rows]
  assert gaps == [pytest.approx(0.0), pytest.approx(0.03)]
  assert [row["tasks"] for row in rows] == [["MRPC"], ["MRPC"]]
  # On its own tasks the small study's gap is SST-2's halved.
  own = size_report.size_rows([str(small)], "electra", "mlm")
  assert own[0]["comparisons"]["electra-mlm"]["mean_difference"] == (
      pytest.approx(0.04))


def test_studies_of_another_recipe_are_refused(tmp_path):
  first = _study(tmp_path / "first", 32, 0.01,
                 ("random_init", "electra", "mlm"))
  other = _study(tmp_path / "other", 64, 0.01,
                 ("random_init", "electra", "mlm"), learning_rate=3e-4)
  with pytest.raises(size_report.SizeReportError,
                     match=r"other/results.json: its finetuning is "
                           r"\{'learning_rate': 0.0003\}, .*first/results.json"
                           r"'s is \{'learning_rate': 0.001\}; compare "
                           "studies of one recipe"):
    size_report.size_rows([str(first), str(other)], "electra", "mlm")


def test_studies_whose_random_init_had_another_recipe_are_refused(tmp_path):
  first = _study(tmp_path / "first", 32, 0.01,
                 ("random_init", "electra", "mlm"))
  own = _study(tmp_path / "own", 64, 0.01, ("random_init", "electra", "mlm"),
               random_init_decay=1.0)
  with pytest.raises(size_report.SizeReportError,
                     match=r"own/results.json: its random_init_finetuning is "
                           r"\{'layerwise_decay_rate': 1.0, 'learning_rate': "
                           r"0.001\}, .*first/results.json's is "
                           r"\{'learning_rate': 0.001\}; compare studies of "
                           "one recipe"):
    size_report.size_rows([str(first), str(own)], "electra", "mlm")
