"""The study's seed-major fine-tuning loop, with the training itself faked:
what each report after a seed holds."""

import json
import pathlib
import types
from unittest import mock

import pytest

from official_electra.experiments import efficiency_study
from official_electra.experiments import study_finetuning
from official_electra.finetuning import outputs
from official_electra.finetuning import trainer
from official_electra.modeling import encoder_config


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


def _fake_finetune_task(trained, recipes=None):
  """Writes each missing seed's results as fine-tuning would (and each
  encoder's hyperparameters in `recipes`)."""
  def finetune_task(family, tokenizer, encoder_config, init_checkpoint,
                    hyperparameters, num_seeds, model_dir, **kwargs):
    del tokenizer, encoder_config, init_checkpoint, kwargs
    if recipes is not None:
      recipes[pathlib.Path(model_dir).name] = hyperparameters
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
                                   finetuning_of=lambda variant: None,
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


def _settings(**overrides):
  return efficiency_study.StudySettings(
      encoder=None, pretraining={}, variants={}, budget_flops=1e12,
      num_seeds=1, checkpoint_fractions=(1.0,),
      finetuning=trainer.FinetuneHyperparameters(
          recipe="paper", learning_rate=3e-4, layerwise_decay_rate=0.8),
      **overrides)


def test_random_init_is_fine_tuned_by_its_own_recipe_unless_told_not_to():
  own = _settings()
  assert own.random_init_own_recipe
  random_init = own.finetuning_of("random_init")
  # No layer-wise decay, the learning rate of every encoder, nothing else
  # changed.
  assert random_init.layerwise_decay_rate == 1.0
  assert random_init.learning_rate == own.finetuning.learning_rate == 3e-4
  assert dict(vars(random_init), layerwise_decay_rate=0.8) == vars(
      own.finetuning)
  assert own.finetuning_of("electra") is own.finetuning
  recorded = _settings(random_init_own_recipe=False)
  assert recorded.finetuning_of("random_init") is recorded.finetuning


@pytest.mark.parametrize("own_recipe, random_init_decay",
                         [(True, 1.0), (False, 0.8)])
def test_each_encoder_is_fine_tuned_with_its_recipe(tmp_path, own_recipe,
                                                    random_init_decay):
  encoders = [_encoder("random_init"), _encoder("electra")]
  recipes = {}
  with mock.patch.object(study_finetuning.trainer, "finetune_task",
                         _fake_finetune_task([], recipes)):
    study_finetuning.finetune_encoders(
        encoders, {encoder.id: (None, {}) for encoder in encoders},
        ["SST-2"], None, None,
        _settings(random_init_own_recipe=own_recipe),
        str(tmp_path / "finetune"),
        types.SimpleNamespace(finetuned=lambda *args: None),
        lambda line: None, lambda runs: None)
  assert recipes["random_init"].layerwise_decay_rate == random_init_decay
  assert recipes["electra_step_0"].layerwise_decay_rate == 0.8
  assert recipes["random_init"].learning_rate == 3e-4


@pytest.mark.parametrize("own_recipe, random_init_decay",
                         [(True, 1.0), (False, 0.8)])
def test_the_record_says_random_inits_recipe(own_recipe, random_init_decay):
  settings = _settings(random_init_own_recipe=own_recipe)
  results = efficiency_study._results(  # pylint: disable=protected-access
      [], [], encoder_config.EncoderConfig(), settings, ["SST-2"], 0.0)
  assert results["finetuning"]["layerwise_decay_rate"] == 0.8
  assert results["random_init_finetuning"] == dict(
      results["finetuning"], layerwise_decay_rate=random_init_decay)
