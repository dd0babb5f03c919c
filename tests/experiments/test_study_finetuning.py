"""The study's seed-major fine-tuning loop, with the training itself faked:
what each report after a seed holds."""

import json
import pathlib
import types
from unittest import mock

from official_electra.experiments import efficiency_study
from official_electra.experiments import study_finetuning
from official_electra.finetuning import outputs


def _encoder(variant):
  return efficiency_study._Encoder(variant=variant, kept_dir=None, step=0,
                                   train_flops=0.0, plan=None,
                                   tower="discriminator")


def _write_seed(finetune_dir, encoder_id, task, seed):
  run_dir = finetune_dir / encoder_id / task / f"seed_{seed}"
  run_dir.mkdir(parents=True, exist_ok=True)
  (run_dir / outputs.EVAL_RESULTS_FILE).write_text(json.dumps(
      {"task": task, "seed": seed,
       "metrics": {"accuracy": 0.5 + seed / 100}}))


def _fake_finetune_task(trained):
  """Writes each missing seed's results as fine-tuning would."""
  def finetune_task(family, tokenizer, encoder_config, init_checkpoint,
                    hyperparameters, num_seeds, model_dir, **kwargs):
    del tokenizer, encoder_config, init_checkpoint, hyperparameters, kwargs
    model_dir = pathlib.Path(model_dir)
    encoder_dir = model_dir.parent
    encoder_id = model_dir.name
    seed_metrics = {}
    for seed in range(num_seeds):
      path = model_dir / family.name / f"seed_{seed}" / (
          outputs.EVAL_RESULTS_FILE)
      if not path.exists():
        _write_seed(encoder_dir, encoder_id, family.name, seed)
        trained.append((encoder_id, seed))
      seed_metrics[seed] = json.loads(path.read_text())["metrics"]
    return dict(outputs.summarize_seeds(seed_metrics, family.score_key),
                task=family.name)
  return finetune_task


def test_every_report_holds_every_finished_seed(tmp_path):
  # Encoder "b" has both seeds already (restored from a record, or finished
  # by an earlier part of the study); "a" has none. Seed-major, "a"'s seed 0
  # is trained first: the report written then must already hold "b"'s two
  # seeds, not only the seeds of the pass so far.
  finetune_dir = tmp_path / "finetune"
  encoders = [_encoder("a"), _encoder("b")]
  for seed in (0, 1):
    _write_seed(finetune_dir, encoders[1].id, "SST-2", seed)
  settings = types.SimpleNamespace(num_seeds=2, finetuning=None,
                                   checkpoint_fractions=(1.0,))
  progress = types.SimpleNamespace(finetuned=lambda *args: None)
  reports, trained = [], []

  with mock.patch.object(study_finetuning.trainer, "finetune_task",
                         _fake_finetune_task(trained)):
    rows = study_finetuning.finetune_encoders(
        encoders, {encoder.id: (None, {}) for encoder in encoders},
        ["SST-2"], None, None,
        settings, str(finetune_dir), progress, lambda line: None,
        lambda runs: reports.append(
            sorted((run["variant"], run["seed"]) for run in runs)))

  assert trained == [(encoders[0].id, 0), (encoders[0].id, 1)]
  assert reports == [[("a", 0), ("b", 0), ("b", 1)],
                     [("a", 0), ("a", 1), ("b", 0), ("b", 1)]]
  assert sorted((run["variant"], run["seed"], run["score"])
                for run in rows) == [("a", 0, 0.5), ("a", 1, 0.51),
                                     ("b", 0, 0.5), ("b", 1, 0.51)]
