"""Restoring a record's runs: random init's only under the same recipe of
its own (the rest is covered end to end in test_efficiency_study_main.py)."""

import json

import pytest

from official_electra.experiments import efficiency_study
from official_electra.experiments import study_records

_FINETUNING = {"learning_rate": 3e-4, "layerwise_decay_rate": 0.8}
_ENCODER = {"hidden_size": 128}


def _record(path, **extra):
  runs = [{"variant": "random_init", "step": 0, "task": "SST-2", "seed": seed,
           "metrics": {"accuracy": 0.7 + seed / 100}, "pretraining": {}}
          for seed in range(2)]
  path.write_text(json.dumps({"runs": runs, "variants": [],
                              "encoder": _ENCODER, "finetuning": _FINETUNING,
                              **extra}))
  return str(path)


def _restore(record, finetune_dir, random_init_finetuning):
  random_init = efficiency_study._Encoder(  # pylint: disable=protected-access
      variant="random_init", kept_dir=None, step=0, train_flops=0.0,
      plan=None, tower="discriminator")
  lines = []
  written = study_records.restore_runs(
      record, str(finetune_dir), [random_init], {}, _ENCODER, _FINETUNING,
      ["SST-2"], 2, lines.append, random_init_finetuning)
  return written, lines


@pytest.mark.parametrize("recorded", [
    {},  # before random init had a recipe of its own: the study's
    {"random_init_finetuning": _FINETUNING}])
def test_random_init_by_the_same_recipe_is_restored(tmp_path, recorded):
  record = _record(tmp_path / "record.json", **recorded)
  written, _ = _restore(record, tmp_path / "finetune", _FINETUNING)
  assert written == {"SST-2": 2}
  assert (tmp_path / "finetune" / "random_init" / "SST-2" / "seed_1"
          / "eval_results.json").exists()


def test_random_init_by_another_recipe_is_fine_tuned_again(tmp_path):
  record = _record(tmp_path / "record.json")
  own = dict(_FINETUNING, layerwise_decay_rate=1.0)
  written, lines = _restore(record, tmp_path / "finetune", own)
  assert written == {"SST-2": 0}
  assert lines[-1] == (
      f"[study] not restored: the runs of random_init in {record} fine-tuned "
      "another recipe (random init's fine-tuning layerwise_decay_rate 0.8 in "
      "the record, 1.0 here); they are fine-tuned again here")
  # A record of the new recipe restores into a study of it.
  newer = _record(tmp_path / "newer.json", random_init_finetuning=own)
  written, _ = _restore(newer, tmp_path / "finetune", own)
  assert written == {"SST-2": 2}
