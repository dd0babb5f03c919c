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
  assert (row["wins"], row["losses"]) == (1, 1)
  row = pairs["first", "random_init"]
  assert row["seeds"] == [0, 1]
  assert row["per_seed_mean_difference"] == pytest.approx(
      [(0.2 + 0.2) / 2, (0.05 - 0.1) / 2])
  medians = {arm["label"]: arm["medians"] for arm in comparison["arms"]}
  assert medians["first"] == pytest.approx({"A": 0.65, "B": 0.5})
  table = compare_records.format_comparison(comparison)
  assert "| replicate (step 100) - first (step 100) |" in table
  assert "| first (step 100) - random_init |" in table


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
