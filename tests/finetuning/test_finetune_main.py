"""End-to-end tests of `python -m official_electra.finetune` on tiny data."""

import json
import os
import subprocess
import sys

import gin
import numpy as np
import pytest
import tensorflow as tf

from official_electra import finetune
from official_electra.finetuning import glue_family
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def _tiny_config(tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)], [])
  return finetune.GinEncoderConfig()


def test_finetunes_two_seeds_and_writes_every_output(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)], [])
  model_dir = tmp_path / "run"
  results = finetune.run("SST-2", str(tiny_glue_dir), None, str(model_dir),
                         str(tiny_vocab_file), True, num_seeds=2)
  summary = results["SST-2"]
  assert set(summary["seeds"]) == {"0", "1"}
  assert summary["median"]["accuracy"] >= 0.9
  on_disk = json.loads((model_dir / "eval_results.json").read_text())
  assert on_disk["SST-2"]["median"] == summary["median"]
  submission = (model_dir / "submission" / "SST-2.tsv").read_text().splitlines()
  assert submission[0] == "index\tprediction"
  assert [row.split("\t")[0] for row in submission[1:]] == [
      str(i) for i in range(10)]
  assert {row.split("\t")[1] for row in submission[1:]} <= {"0", "1"}
  seed_dir = model_dir / "SST-2" / "seed_0"
  assert os.listdir(seed_dir / "logs" / "train")
  assert os.listdir(seed_dir / "logs" / "dev")
  assert (seed_dir / "checkpoint" / "classifier.index").is_file()
  assert "glue_encoder.hidden_size = 32" in (
      model_dir / "operative_config.gin").read_text()
  # A rerun reuses the finished seeds instead of training again.
  mtime = os.path.getmtime(seed_dir / "eval_results.json")
  finetune.run("SST-2", str(tiny_glue_dir), None, str(model_dir),
               str(tiny_vocab_file), True, num_seeds=2)
  assert os.path.getmtime(seed_dir / "eval_results.json") == mtime


def test_regression_pair_task_with_swapped_pairs(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1"])
  results = finetune.run("STS-B", str(tiny_glue_dir), None,
                         str(tmp_path / "run"), str(tiny_vocab_file), True, 1)
  assert set(results["STS-B"]["median"]) == {"pearson", "spearman"}
  seed_results = json.loads(
      (tmp_path / "run" / "STS-B" / "seed_0" / "eval_results.json").read_text())
  assert seed_results["num_train_examples"] == 80  # 40 rows, both orders
  scores = (tmp_path / "run" / "submission" / "STS-B.tsv").read_text()
  assert len(scores.splitlines()) == 6
  float(scores.splitlines()[1].split("\t")[1])


def test_starts_from_a_pretraining_checkpoint(tmp_path, tiny_gin_file):
  config = _tiny_config(tiny_gin_file)
  pretrained = encoder_config.build_encoder(config)
  pretrained({key: tf.zeros([1, 2], tf.int32) for key in
              ("input_word_ids", "input_mask", "input_type_ids")})
  for variable in pretrained.variables:
    variable.assign(tf.fill(variable.shape, 0.5))
  prefix = tf.train.Checkpoint(
      model=tf.train.Checkpoint(discriminator_network=pretrained)).write(
          str(tmp_path / "pretrain" / "ckpt-1"))
  classifier = glue_family.build_classifier(
      config, tasks.get_task("RTE"), trainer.FinetuneHyperparameters(), prefix)
  for variable in classifier.encoder.variables:
    np.testing.assert_array_equal(variable.numpy(), 0.5)
  smaller = encoder_config.EncoderConfig.from_dict(
      dict(config.__dict__, hidden_size=16, num_attention_heads=1))
  with pytest.raises(checkpoints.CheckpointError):
    glue_family.build_classifier(smaller, tasks.get_task("RTE"),
                             trainer.FinetuneHyperparameters(), prefix)


def test_command_line_errors_are_one_line(tmp_path, tiny_glue_dir,
                                          tiny_vocab_file):
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.finetune", "--task=SST",
       f"--glue_dir={tiny_glue_dir}", f"--vocab_file={tiny_vocab_file}",
       f"--model_dir={tmp_path / 'run'}"],
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert completed.returncode == 1
  assert "error: unknown GLUE task 'SST'; valid tasks: CoLA, SST-2" in (
      completed.stderr)
  assert "Traceback" not in completed.stderr


def test_malformed_row_is_reported_with_file_and_line(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)], [])
  dev_file = tiny_glue_dir / "SST-2" / "dev.tsv"
  dev_file.write_text(dev_file.read_text() + "a broken row\n")
  with pytest.raises(finetune.glue.GlueDataError,
                     match=r"SST-2/dev\.tsv:66: expected 2 tab-separated"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "run"),
                 str(tiny_vocab_file), True, 1)


@pytest.mark.parametrize("rule, expected", [
    ("paper", {"head": 1.0, "layer_1": 0.5, "layer_0": 0.25,
               "embeddings": 0.125}),
    ("original_code", {"head": 1.0, "layer_1": 0.25, "layer_0": 0.125,
                       "embeddings": 0.0625}),
])
def test_the_compiled_optimizer_decays_the_learning_rate_layer_by_layer(
    tiny_gin_file, rule, expected):
  hyperparameters = trainer.FinetuneHyperparameters(
      learning_rate=1e-3, layerwise_decay_rate=0.5, layerwise_decay_rule=rule,
      warmup_proportion=0.0, weight_decay_rate=0.0)
  classifier = glue_family.build_classifier(
      _tiny_config(tiny_gin_file), tasks.get_task("RTE"), hyperparameters)
  glue_family.compile_classifier(classifier, tasks.get_task("RTE"), hyperparameters,
                   num_train_steps=10)
  variables = classifier.trainable_variables
  before = [variable.numpy() for variable in variables]
  # The first step of the original AdamW on a gradient of ones moves every
  # weight by lr * multiplier * 0.1 / (sqrt(0.001) + 1e-6).
  classifier.optimizer.apply_gradients(
      [(tf.ones_like(variable), variable) for variable in variables])
  unit_step = 1e-3 * 0.1 / (0.001 ** 0.5 + 1e-6)
  groups = set()
  for variable, initial in zip(variables, before):
    name = variable.name
    group = ("head" if "classification_head" in name else
             "layer_1" if "layer_1/" in name else
             "layer_0" if "layer_0/" in name else "embeddings")
    groups.add(group)
    np.testing.assert_allclose((initial - variable.numpy()) / unit_step,
                               np.full(initial.shape, expected[group]),
                               rtol=1e-3, err_msg=name)
  assert groups == set(expected)


def test_a_seed_stopped_after_training_finishes_without_training_again(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file, monkeypatch):
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1"])
  model_dir = tmp_path / "run"
  evaluations, scored_weights = [], []
  evaluate = trainer.dev_metrics_callback.DevMetricsCallback.evaluate

  def recording_evaluate(callback):
    scored_weights.append(callback.model.get_weights())
    evaluations.append(evaluate(callback))
    return evaluations[-1]

  monkeypatch.setattr(trainer.dev_metrics_callback.DevMetricsCallback,
                      "evaluate", recording_evaluate)

  def crash(*args, **kwargs):
    raise RuntimeError("killed while writing predictions")

  with monkeypatch.context() as patch:
    patch.setattr(trainer.outputs, "write_submission", crash)
    with pytest.raises(RuntimeError, match="killed while writing"):
      finetune.run("SST-2", str(tiny_glue_dir), None, str(model_dir),
                   str(tiny_vocab_file), True, 1)
  train_checkpoints = model_dir / "SST-2" / "seed_0" / "train_checkpoints"
  assert tf.train.latest_checkpoint(str(train_checkpoints)).endswith("-16")
  # A configuration with fewer steps than the checkpoint holds is an error.
  gin.clear_config()
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1",
                       "glue_hyperparameters.batch_size = 32"])
  with pytest.raises(checkpoints.CheckpointError,
                     match=r"ckpt-16: step 16 is past this run's 8 steps"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(model_dir),
                 str(tiny_vocab_file), True, 1)
  gin.clear_config()
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1"])
  fit_calls = []
  monkeypatch.setattr(trainer.tf_keras.Model, "fit",
                      lambda *args, **kwargs: fit_calls.append(args))
  results = finetune.run("SST-2", str(tiny_glue_dir), None, str(model_dir),
                         str(tiny_vocab_file), True, 1)
  assert not fit_calls
  # The rerun scores the trained weights the checkpoint holds, the ones the
  # first run scored after its last epoch, and reports that score.
  assert len(evaluations) == 2
  for trained, rescored in zip(*scored_weights):
    np.testing.assert_array_equal(rescored, trained)
  assert results["SST-2"]["median"] == evaluations[0]
  assert (model_dir / "submission" / "SST-2.tsv").is_file()
  assert not train_checkpoints.exists()


def test_unreadable_inputs_and_output_folder_are_user_errors(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file):
  finetune._parse_gin([str(tiny_gin_file)], [])
  train_file = tiny_glue_dir / "SST-2" / "train.tsv"
  original = train_file.read_bytes()
  train_file.write_bytes(b"sentence\tlabel\ncaf\xe9 movie\t1\n")
  with pytest.raises(finetune.glue.GlueDataError,
                     match=r"SST-2/train\.tsv: not UTF-8 text .* convert it"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "run"),
                 str(tiny_vocab_file), True, 1)
  train_file.write_bytes(original[:original.index(b"\n", 20) + 1])
  with pytest.raises(finetune.glue.GlueDataError,
                     match=r"SST-2/train\.tsv: 1 training examples make no "
                     r"batch of 16; check the file or lower"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "run"),
                 str(tiny_vocab_file), True, 1)
  (tmp_path / "a_file").write_text("")
  with pytest.raises(finetune.ModelDirError, match=r"a_file: cannot create"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "a_file"),
                 str(tiny_vocab_file), True, 1)


@pytest.mark.parametrize("binding, message", [
    ("batch_size = 'x'", r"batch_size = 'x' must be an integer >= 1"),
    ("save_checkpoints_steps = 0",
     r"save_checkpoints_steps = 0 must be an integer >= 1"),
    ("dropout_rate = 1.5", r"dropout_rate = 1.5 must be a number in \[0, 1\)"),
])
def test_hyperparameter_of_wrong_type_or_range_is_a_gin_error(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file, binding, message):
  finetune._parse_gin([str(tiny_gin_file)], [f"glue_hyperparameters.{binding}"])
  with pytest.raises(finetune.GinConfigError, match=message + "; fix the"):
    finetune.run("SST-2", str(tiny_glue_dir), None, str(tmp_path / "run"),
                 str(tiny_vocab_file), True, 1)
  assert not (tmp_path / "run").exists()


@pytest.fixture
def tiny_pretraining_dir(tmp_path):
  """A pretraining model_dir of the tiny model (not ELECTRA-Small)."""
  from tests.training import tiny_pretraining  # pylint: disable=import-outside-toplevel
  data = tiny_pretraining.build_data(tmp_path)
  model_dir = tmp_path / "pretrained"
  tiny_pretraining.train(model_dir, data, num_train_steps=2)
  return model_dir


def _finetune_command(tmp_path, glue_dir, init_checkpoint, *gin_params):
  return [sys.executable, "-m", "official_electra.finetune", "--task=SST-2",
          f"--glue_dir={glue_dir}", f"--init_checkpoint={init_checkpoint}",
          f"--model_dir={tmp_path / 'glue'}", "--gin_file=gin/glue/small.gin",
          "--gin_bindings=glue_hyperparameters.max_seq_length=16",
          "--gin_bindings=glue_hyperparameters.num_train_epochs=1",
          *[f"--gin_bindings={param}" for param in gin_params]]


def test_small_gin_fine_tunes_any_size_with_the_checkpoints_architecture(
    tmp_path, tiny_glue_dir, tiny_pretraining_dir):
  completed = subprocess.run(
      _finetune_command(tmp_path, tiny_glue_dir, tiny_pretraining_dir),
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "SST-2: accuracy=" in completed.stdout
  recorded = json.loads((tmp_path / "glue" / "SST-2" / "seed_0" /
                         "model_config.json").read_text())["model"][
                             "discriminator"]
  architecture = json.loads(
      (tiny_pretraining_dir / "model_config.json").read_text())["model"][
          "discriminator"]
  assert recorded == architecture
  assert recorded["hidden_size"] == 32
  # Both flag names took effect (small.gin says 3 epochs and length 128).
  hyperparameters = json.loads((tmp_path / "glue" / "SST-2" / "seed_0" /
                                "eval_results.json").read_text())[
                                    "hyperparameters"]
  assert (hyperparameters["num_train_epochs"],
          hyperparameters["max_seq_length"]) == (1, 16)


def test_a_binding_that_contradicts_the_checkpoint_lists_the_differences(
    tmp_path, tiny_glue_dir, tiny_pretraining_dir):
  completed = subprocess.run(
      _finetune_command(tmp_path, tiny_glue_dir, tiny_pretraining_dir,
                        "glue_encoder.hidden_size=256",
                        "glue_encoder.num_layers=12",
                        "glue_encoder.dropout_rate=0.1"),
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert "Traceback" not in completed.stderr
  assert lines[-1].startswith(f"error: {tiny_pretraining_dir}: glue_encoder "
                              "bindings contradict the architecture")
  assert ("hidden_size: checkpoint 32, gin 256; num_layers: checkpoint 2, "
          "gin 12)") in lines[-1]
  assert "dropout_rate" not in lines[-1]  # It agrees with the checkpoint.
  assert "remove them" in lines[-1]
