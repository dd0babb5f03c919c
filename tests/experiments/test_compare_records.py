"""compare_records: encoders of different studies' records, paired by seed."""

import json
import subprocess
import sys

import pytest

from official_electra.experiments import compare_records
from tests.training import tiny_pretraining

_FINETUNING = {"learning_rate": 3e-4, "batch_size": 32}
_ENCODER = {"hidden_size": 128}


def _record(path, scores_by_variant, finetuning=None, encoder=None):
  """A results.json holding `{variant: {(task, seed): score}}` at the whole
  budget (random init at 0)."""
  runs = [{"variant": variant, "step": 0 if variant == "random_init" else 100,
           "fraction": 0.0 if variant == "random_init" else 1.0,
           "budget_fraction": 0.0 if variant == "random_init" else 1.0,
           "train_flops": 0.0 if variant == "random_init" else 3e14,
           "task": task, "seed": seed, "score": score}
          for variant, scores in scores_by_variant.items()
          for (task, seed), score in scores.items()]
  path.write_text(json.dumps({"runs": runs, "encoder": encoder or _ENCODER,
                              "finetuning": finetuning or _FINETUNING}))
  return str(path)


def _scores(values):
  return {(task, seed): value for (task, seed), value in values}


def test_two_records_are_compared_seed_by_seed(tmp_path):
  first = _record(tmp_path / "first.json", {
      "electra": _scores([(("A", 0), 0.70), (("A", 1), 0.60), (("B", 0), 0.5),
                          (("B", 1), 0.4), (("B", 2), 0.9)]),
      "random_init": _scores([(("A", 0), 0.50), (("A", 1), 0.55),
                              (("B", 0), 0.3), (("B", 1), 0.5)])})
  # The replicate has seeds 0 and 2 only: seed 2 lacks task A elsewhere, so
  # only seed 0 pairs with the first record on both tasks.
  replicate = _record(tmp_path / "replicate.json", {
      "electra": _scores([(("A", 0), 0.66), (("B", 0), 0.56),
                          (("A", 2), 0.1), (("B", 2), 0.1)])})
  arms = [compare_records.read_arm(spec) for spec in (
      f"replicate,{replicate},electra,1.0", f"first,{first},electra,1",
      f"random_init,{first},random_init,0")]
  comparison = compare_records.compare_arms(arms, ["A", "B"])
  pairs = {(row["a"], row["b"]): row for row in comparison["paired"]}
  assert set(pairs) == {("replicate", "first"), ("replicate", "random_init"),
                        ("first", "random_init")}
  row = pairs["replicate", "first"]
  assert row["seeds"] == [0]
  assert row["mean_difference"] == pytest.approx(((0.66 - 0.70) +
                                                  (0.56 - 0.5)) / 2)
  # One seed, won on the mean over tasks: the unit is the seed.
  assert (row["wins"], row["losses"], row["ties"]) == (1, 0, 0)
  assert row["tasks"]["A"]["losses"] == 1 and row["t_95"] is None
  row = pairs["first", "random_init"]
  assert row["seeds"] == [0, 1]
  assert row["per_seed_mean_difference"] == pytest.approx(
      [(0.2 + 0.2) / 2, (0.05 - 0.1) / 2])
  medians = {arm["label"]: arm["medians"] for arm in comparison["arms"]}
  assert medians["first"] == pytest.approx({"A": 0.65, "B": 0.5})
  table = compare_records.format_comparison(comparison)
  assert "| replicate (step 100) - first (step 100) |" in table
  assert "| first (step 100) - random_init |" in table
  assert table.index("Paired differences per task") < table.index(
      "Paired differences of the mean over tasks")


def test_a_label_given_twice_is_an_arm_of_two_pretraining_runs(tmp_path):
  # ELECTRA pretrained twice: the second run is 0.02 above the first on
  # every seed. Random init (no pretraining run) pairs with both.
  seeds = range(5)
  noise = [0.01, -0.02, 0.0, 0.015, -0.005]
  random_init = {("A", seed): 0.5 + noise[seed] for seed in seeds}
  first = {key: score + 0.03 for key, score in random_init.items()}
  second = {key: score + 0.05 + 0.001 * key[1]
            for key, score in random_init.items()}
  first_path = _record(tmp_path / "first.json", {"electra": first,
                                                  "random_init": random_init})
  second_path = _record(tmp_path / "second.json", {"electra": second})
  arms = [compare_records.read_arm(spec) for spec in (
      f"electra,{first_path},electra,1.0", f"electra,{second_path},electra,1.0",
      f"random,{first_path},random_init,0")]
  comparison = compare_records.compare_arms(arms, ["A"])
  (row,) = comparison["paired"]
  assert (row["a"], row["b"], row["pretraining_runs"]) == (
      "electra", "random", [2, 1])
  assert row["per_seed_mean_difference"] == pytest.approx(
      [0.04 + 0.0005 * seed for seed in seeds])
  single = compare_records.compare_arms([arms[0], arms[2]], ["A"])["paired"][0]
  assert row["t_95"][1] - row["t_95"][0] > 3 * (single["t_95"][1] -
                                                single["t_95"][0])
  (electra, _) = comparison["arms"]
  assert electra["pretraining_runs"] == 2
  # The median over seeds of the runs' mean: seed 2's.
  assert electra["medians"]["A"] == pytest.approx(
      0.5 + noise[2] + 0.04 + 0.0005 * 2)
  table = compare_records.format_comparison(comparison)
  assert "| electra | 100 | 2 | " in table
  assert "| electra (step 100) - random | 1 | 3e+14 | 5 | 2, 1 |" in table
  # A label names one variant at one budget.
  other_step = dict(arms[1]._asdict(), step=50)
  with pytest.raises(compare_records.RecordError,
                     match="arm electra is given at other steps"):
    compare_records.compare_arms(
        [arms[0], compare_records.Arm(**other_step), arms[2]], ["A"])


def test_each_arm_says_the_layerwise_decay_it_was_fine_tuned_with(tmp_path):
  # A study with random init's own recipe records it; an older record's
  # random init took the study's recipe.
  scores = _scores([(("A", 0), 0.6), (("A", 1), 0.5)])
  finetuning = dict(_FINETUNING, layerwise_decay_rate=0.8)
  newer = tmp_path / "newer.json"
  _record(newer, {"electra": scores, "random_init": scores}, finetuning)
  record = json.loads(newer.read_text())
  record["random_init_finetuning"] = dict(finetuning, layerwise_decay_rate=1.0)
  newer.write_text(json.dumps(record))
  older = _record(tmp_path / "older.json", {"random_init": scores},
                  finetuning)
  arms = [compare_records.read_arm(spec) for spec in (
      f"electra,{newer},electra,1.0", f"random,{newer},random_init,0",
      f"random_before,{older},random_init,0")]
  comparison = compare_records.compare_arms(arms, ["A"])
  assert [arm["layerwise_decay_rate"] for arm in comparison["arms"]] == [
      0.8, 1.0, 0.8]


def test_the_table_shows_the_trivial_baselines_beside_the_arms():
  comparison = {"tasks": ["A", "B"], "metrics": {"A": "accuracy",
                                                 "B": "spearman"},
                "arms": [{"label": "x", "step": 1, "pretraining_runs": 1,
                          "layerwise_decay_rate": 1.0,
                          "medians": {"A": 0.5, "B": 0.25},
                          "seeds": {"A": 5, "B": 5}}],
                "paired": [],
                "baselines": {"A": {"majority class": {"accuracy": 0.7,
                                                       "score": 0.7}}}}
  table = compare_records.format_comparison(comparison)
  assert ("| arm | step | pretraining runs | A (accuracy) | B (spearman) | "
          "mean of medians (mixes accuracy, spearman) | fine-tuning's "
          "layer-wise decay |") in table
  assert "| x | 1 | 1 | 50.0 (5 seeds) | 25.0 (5 seeds) | 37.5 | 1.0 |" in table
  assert "| baseline: majority class | | | 70.0 | - | | |" in table


def test_records_of_another_recipe_or_without_the_arm_are_refused(tmp_path):
  first = _record(tmp_path / "first.json",
                  {"electra": _scores([(("A", 0), 0.7)])})
  other = _record(tmp_path / "other.json",
                  {"electra": _scores([(("A", 0), 0.7)])},
                  finetuning=dict(_FINETUNING, learning_rate=1e-4))
  arms = [compare_records.read_arm(f"{label},{path},electra,1.0")
          for label, path in (("first", first), ("other", other))]
  with pytest.raises(compare_records.RecordError,
                     match="arm other's record has another finetuning"):
    compare_records.compare_arms(arms, ["A"])
  with pytest.raises(compare_records.RecordError,
                     match="has no runs of mlm at fraction 1; its variants: "
                           "electra"):
    compare_records.read_arm(f"x,{first},mlm,1.0")
  # Another encoder shape: refused unless the comparison is meant; another
  # recipe stays refused then.
  narrow = _record(tmp_path / "narrow.json",
                   {"random_init": _scores([(("A", 0), 0.6)])},
                   encoder={"hidden_size": 32})
  shapes = [arms[0], compare_records.read_arm(f"narrow,{narrow},random_init,0")]
  with pytest.raises(compare_records.RecordError,
                     match="arm narrow's record has another encoder .* pass "
                           "--across_shapes"):
    compare_records.compare_arms(shapes, ["A"])
  across = compare_records.compare_arms(shapes, ["A"], across_shapes=True)
  assert across["paired"][0]["mean_difference"] == pytest.approx(0.1)
  with pytest.raises(compare_records.RecordError,
                     match="arm other's record has another finetuning"):
    compare_records.compare_arms(arms, ["A"], across_shapes=True)
  with pytest.raises(compare_records.RecordError, match="give label,"):
    compare_records.read_arm(f"x,{first},electra")
  with pytest.raises(compare_records.RecordError, match="no runs on B"):
    compare_records.compare_arms(arms[:1], ["A", "B"])


def test_the_program_writes_the_table_or_one_error_line(tmp_path):
  first = _record(tmp_path / "first.json", {
      "electra": _scores([(("A", 0), 0.7), (("A", 1), 0.6)]),
      "mlm": _scores([(("A", 0), 0.6), (("A", 1), 0.65)])})
  def command(tasks):
    return [sys.executable, "-m", "official_electra.experiments."
            "compare_records", f"--arm=electra,{first},electra,1.0",
            f"--arm=mlm,{first},mlm,1.0", f"--tasks={tasks}",
            f"--output_dir={tmp_path / 'out'}"]
  completed = subprocess.run(command("A"), capture_output=True, text=True,
                             timeout=300, cwd=tiny_pretraining.REPO_ROOT)
  assert completed.returncode == 0, completed.stderr[-2000:]
  assert "| electra (step 100) - mlm (step 100) |" in completed.stdout
  written = json.loads((tmp_path / "out" / "comparison.json").read_text())
  assert written["paired"][0]["mean_difference"] == pytest.approx(0.025)
  completed = subprocess.run(command("A,Z"),
                             capture_output=True, text=True, timeout=300,
                             cwd=tiny_pretraining.REPO_ROOT)
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1] == ("error: arm electra has no runs on Z; drop them from "
                       "--tasks")
