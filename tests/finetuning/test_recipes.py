"""The fine-tuning recipes against independent statements of the original.

Each expectation is written here, in NumPy or plain Python, from
google-research/electra (HEAD 8a46635), cited by file and function, or from
the paper's Table 7; none is computed by the code under test.
"""

import json
import re

import gin
import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra import finetune
from official_electra.data import glue
from official_electra.finetuning import glue_family
from official_electra.finetuning import inputs
from official_electra.finetuning import metrics
from official_electra.finetuning import recipes
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.optimization import layerwise_decay
from official_electra.tokenization import wordpiece_tokenizer
from tests import module_run
from tests.finetuning import recipes_distributed_run as step_run


# configure_finetuning.FinetuningConfig.__init__: learning_rate = 1e-4,
# layerwise_lr_decay = 0.8; model_size "large": 5e-5 and 0.9.
_ORIGINAL_CONFIG = {"small": (1e-4, 0.8), "base": (1e-4, 0.8),
                    "large": (5e-5, 0.9)}
# Clark et al. (2020), Table 7: learning rate and layer-wise decay per size.
_PAPER_TABLE_7 = {"small": (3e-4, 0.8), "base": (1e-4, 0.8),
                  "large": (5e-5, 0.9)}


@pytest.fixture(autouse=True)
def _clear_gin():
  gin.clear_config()
  yield
  gin.clear_config()


def test_the_default_is_the_original_code_and_each_field_stays_overridable():
  default = trainer.FinetuneHyperparameters()
  assert (default.recipe, default.learning_rate, default.layerwise_decay_rule,
          default.loss_reduction, default.scale_regression_targets) == (
              "original_code", 1e-4, "original_code", "sum", True)
  paper = trainer.FinetuneHyperparameters(recipe="paper")
  assert (paper.learning_rate, paper.layerwise_decay_rule,
          paper.loss_reduction, paper.scale_regression_targets) == (
              3e-4, "paper", "mean", False)
  mixed = trainer.FinetuneHyperparameters(
      recipe="paper", learning_rate=2e-4, loss_reduction="sum",
      scale_regression_targets=True)
  assert (mixed.learning_rate, mixed.layerwise_decay_rule,
          mixed.loss_reduction, mixed.scale_regression_targets) == (
              2e-4, "paper", "sum", True)
  with pytest.raises(ValueError, match="unknown fine-tuning recipe 'code'; "
                     "valid recipes: original_code, paper"):
    trainer.FinetuneHyperparameters(recipe="code")


@pytest.mark.parametrize("size", ["small", "base", "large"])
@pytest.mark.parametrize("recipe", ["original_code", "paper"])
def test_one_binding_switches_a_gin_file_between_the_recipes(size, recipe):
  params = [] if recipe == "original_code" else [
      "glue_hyperparameters.recipe = 'paper'"]
  finetune._parse_gin([f"gin/glue/{size}.gin"], params)
  hyperparameters = finetune._hyperparameters()
  table = _ORIGINAL_CONFIG if recipe == "original_code" else _PAPER_TABLE_7
  assert (hyperparameters.learning_rate,
          hyperparameters.layerwise_decay_rate) == table[size]
  assert hyperparameters.recipe == recipe
  assert hyperparameters.layerwise_decay_rule == recipe
  assert hyperparameters.loss_reduction == (
      "sum" if recipe == "original_code" else "mean")
  assert hyperparameters.scale_regression_targets == (recipe == "original_code")


def test_small_trains_its_top_block_3_75_times_faster_under_the_paper():
  rates = {}
  for recipe in ("original_code", "paper"):
    gin.clear_config()
    finetune._parse_gin(["gin/glue/small.gin"],
                        [f"glue_hyperparameters.recipe = '{recipe}'"])
    hyperparameters = finetune._hyperparameters()
    multiplier = layerwise_decay.layerwise_learning_rate_multipliers(
        12, hyperparameters.layerwise_decay_rate,
        hyperparameters.layerwise_decay_rule)
    rates[recipe] = hyperparameters.learning_rate * multiplier("layer_11/x")
  # 3e-4 * 0.8 (paper) against 1e-4 * 0.8**2 (the code).
  assert rates["paper"] / rates["original_code"] == pytest.approx(3.75)


@pytest.mark.parametrize("binding, message", [
    ("recipe = 'code'", "recipe = 'code' must be one of 'original_code', "
                        "'paper'; fix the binding"),
    ("loss_reduction = 'total'", "loss_reduction = 'total' must be None or "
                                 "one of 'sum', 'mean'; fix the binding"),
    ("scale_regression_targets = 1", "scale_regression_targets = 1 must be "
                                     "None or True or False; fix the binding"),
])
def test_a_bad_recipe_binding_is_one_line(binding, message):
  finetune._parse_gin(["gin/glue/small.gin"],
                      [f"glue_hyperparameters.{binding}"])
  with pytest.raises(finetune.GinConfigError) as error:
    finetune._hyperparameters()
  assert str(error.value) == "glue_hyperparameters." + message


def _originals_gradient(classifier, features, targets, task, reduction,
                        clip_norm=1.0):
  """The original's loss and clipped gradient, written from its code.

  Per example (`classification_tasks.ClassificationTask.get_prediction_module`)
  `-sum(one_hot(label) * log_softmax(logits))`, or for a regression task
  (`RegressionTask.get_prediction_module`) `(prediction - target)**2`;
  `run_finetuning.FinetuningModel.__init__` sums them over the batch (the
  paper recipe averages); `optimization.create_optimizer` clips the global
  norm to 1.0 (the dense gradient's norm: the original's lookups are one-hot
  products on TPU, so a token used twice counts once).

  Returns:
    The clipped gradients (dense) and the global norm before clipping.
  """
  with tf.GradientTape() as tape:
    outputs = classifier(features, training=True)
    if task.is_regression:
      per_example = tf.square(outputs[:, 0] - targets)
    else:
      log_probs = tf.nn.log_softmax(outputs, axis=-1)
      per_example = -tf.reduce_sum(
          tf.one_hot(targets, task.num_outputs) * log_probs, axis=-1)
    loss = tf.reduce_sum(per_example)
    if reduction == "mean":
      loss /= len(targets)
  gradients = tape.gradient(loss, classifier.trainable_variables)
  norm = step_run.global_norm(gradients)
  scale = min(1.0, clip_norm / norm)
  return [step_run.dense(gradient) * scale for gradient in gradients], norm


@pytest.mark.parametrize("task_name", ["RTE", "STS-B"])
@pytest.mark.parametrize("recipe", ["original_code", "paper"])
def test_the_clip_sees_the_gradient_of_the_recipes_loss(
    task_name, recipe, monkeypatch):
  task = tasks.get_task(task_name)
  hyperparameters = trainer.FinetuneHyperparameters(recipe=recipe,
                                                    dropout_rate=0.0)
  tf_keras.utils.set_random_seed(0)
  classifier = glue_family.build_classifier(step_run.TINY, task, hyperparameters)
  glue_family.compile_classifier(classifier, task, hyperparameters, num_train_steps=10)
  features, labels = step_run.batch()
  targets = (labels * 0.3).astype(np.float32) if task.is_regression else labels
  norms = {reduction: _originals_gradient(classifier, features, targets, task,
                                          reduction)[1]
           for reduction in ("sum", "mean")}
  # The original's clip at 1.0 is active on the sum's gradient.
  assert norms["sum"] > 1.0
  # A norm between the two clips one loss's gradient and not the other's:
  # the step tells which loss the clip saw (at 1.0 both may be clipped to
  # the same direction).
  clip_norm = float(np.sqrt(norms["sum"] * norms["mean"]))
  classifier.gradient_clip_norm = clip_norm  # What build_classifier sets.
  expected, _ = _originals_gradient(classifier, features, targets, task,
                                    hyperparameters.loss_reduction, clip_norm)
  applied = []
  monkeypatch.setattr(classifier.optimizer, "apply_gradients",
                      lambda pairs, **kwargs: applied.extend(pairs))
  classifier.train_step(tf.nest.map_structure(tf.constant,
                                              (features, targets)))
  assert len(applied) == len(expected)
  for (gradient, variable), reference in zip(applied, expected):
    np.testing.assert_allclose(step_run.dense(gradient), reference,
                               rtol=1e-4, atol=1e-6, err_msg=variable.name)


def test_the_sum_is_the_batch_size_times_the_mean_before_clipping():
  task = tasks.get_task("RTE")
  classifier = glue_family.build_classifier(
      step_run.TINY, task, trainer.FinetuneHyperparameters(dropout_rate=0.0))
  features, labels = step_run.batch()
  norms = {reduction: _originals_gradient(classifier, features, labels, task,
                                          reduction)[1]
           for reduction in ("sum", "mean")}
  assert norms["sum"] == pytest.approx(step_run.GLOBAL_BATCH_SIZE *
                                       norms["mean"], rel=1e-5)


def test_one_device_step_is_the_summed_gradient_clipped_to_norm_one():
  strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
  unclipped = step_run.measure_step(strategy, None)
  assert unclipped["distance_to_sum"] < 1e-6 * unclipped["update_norm"]
  clipped = step_run.measure_step(strategy, 1.0)
  assert clipped["reference_norm"] > 5.0
  assert clipped["distance_to_clipped_sum"] < 1e-5


@pytest.fixture(scope="module")
def two_replica_steps():
  return module_run.last_json_line("tests.finetuning.recipes_distributed_run")


def test_two_replicas_sum_the_losses_of_the_global_batch(two_replica_steps):
  unclipped = two_replica_steps["unclipped"]
  assert unclipped["distance_to_sum"] < 1e-6 * unclipped["update_norm"]


def test_two_replicas_clip_the_summed_gradient_once(two_replica_steps):
  clipped = two_replica_steps["clipped"]
  assert clipped["distance_to_clipped_sum"] < 1e-5


def _test_features(glue_dir, vocab_file):
  """STS-B's test set as the tiny gin file packs it (16 tokens)."""
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(str(vocab_file),
                                                     lower_case=True)
  examples = glue.read_split(str(glue_dir), "STS-B", "test")
  return inputs.encode_examples(examples, tokenizer, 16)


def _train_scores(glue_dir):
  """The score column of STS-B's train.tsv, read here."""
  rows = (glue_dir / "STS-B" / "train.tsv").read_text().splitlines()[1:]
  return [float(row.split("\t")[-1]) for row in rows]


def test_original_code_trains_sts_b_on_scores_divided_by_five(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file, monkeypatch):
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1"])
  trained_labels, outputs_before_scaling = [], []
  make_training_dataset = inputs.make_training_dataset
  scale_regression_output = recipes.scale_regression_output

  def recording_dataset(features, labels, *args, **kwargs):
    trained_labels.append(np.array(labels))
    return make_training_dataset(features, labels, *args, **kwargs)

  def recording_scale(classifier, factor):
    features = _test_features(tiny_glue_dir, tiny_vocab_file)
    outputs_before_scaling.append(classifier(features, training=False)[:, 0])
    scale_regression_output(classifier, factor)

  monkeypatch.setattr(inputs, "make_training_dataset",
                      recording_dataset)
  monkeypatch.setattr(recipes, "scale_regression_output", recording_scale)
  finetune.run("STS-B", str(tiny_glue_dir), None, str(tmp_path / "run"),
               str(tiny_vocab_file), True, 1)
  # classification_tasks.RegressionTask._add_features: (label - 0.0) / 5.0,
  # for both sentence orders (STS._create_examples, double_unordered).
  scores = _train_scores(tiny_glue_dir)
  expected = sorted([(score - 0.0) / 5.0 for score in scores] * 2)
  np.testing.assert_allclose(sorted(trained_labels[0]), expected, rtol=1e-6)
  # The submission is in GLUE's 0-5 units: five times what the model trained
  # on scores / 5 predicts (the original pickles the 0-1 predictions).
  submitted = [float(row.split("\t")[1]) for row in
               (tmp_path / "run" / "submission" / "STS-B.tsv").read_text()
               .splitlines()[1:]]
  np.testing.assert_allclose(submitted, 5.0 * outputs_before_scaling[0].numpy(),
                             atol=1e-3)
  recorded = json.loads((tmp_path / "run" / "STS-B" / "seed_0" /
                         "eval_results.json").read_text())["hyperparameters"]
  assert recorded["recipe"] == "original_code"


def test_paper_trains_sts_b_on_the_raw_scores(
    tmp_path, tiny_glue_dir, tiny_vocab_file, tiny_gin_file, monkeypatch):
  finetune._parse_gin([str(tiny_gin_file)],
                      ["glue_hyperparameters.num_train_epochs = 1",
                       "glue_hyperparameters.recipe = 'paper'"])
  trained_labels = []
  make_training_dataset = inputs.make_training_dataset

  def recording_dataset(features, labels, *args, **kwargs):
    trained_labels.append(np.array(labels))
    return make_training_dataset(features, labels, *args, **kwargs)

  monkeypatch.setattr(inputs, "make_training_dataset",
                      recording_dataset)
  finetune.run("STS-B", str(tiny_glue_dir), None, str(tmp_path / "run"),
               str(tiny_vocab_file), True, 1)
  scores = _train_scores(tiny_glue_dir)
  np.testing.assert_array_equal(sorted(trained_labels[0]), sorted(scores * 2))


def test_scaling_the_output_multiplies_the_predictions_exactly():
  task = tasks.get_task("STS-B")
  classifier = glue_family.build_classifier(
      step_run.TINY, task, trainer.FinetuneHyperparameters())
  features, _ = step_run.batch()
  before = classifier(features, training=False).numpy()
  recipes.scale_regression_output(classifier, 5.0)
  after = classifier(features, training=False).numpy()
  np.testing.assert_allclose(after, 5.0 * before, rtol=1e-6, atol=1e-6)
  # The dev metrics see the unscaled model's outputs times 5 as well.
  np.testing.assert_allclose(
      glue_family.predictions_from_outputs(task, before, 5.0),
      after[:, 0], rtol=1e-6, atol=1e-6)


def test_scaling_back_leaves_the_originals_dev_scores_unchanged():
  # classification_metrics.RegressionScorer: Pearson and Spearman of the
  # targets / 5 against the 0-1 predictions; ours: of the scores against 5x.
  rng = np.random.default_rng(0)
  scores = rng.uniform(0, 5, 200)
  predictions = scores / 5 + rng.normal(0, 0.1, 200)
  pearson = np.corrcoef(scores / 5, predictions)[0, 1]
  ranks = [np.argsort(np.argsort(values)) for values in (scores / 5,
                                                         predictions)]
  spearman = np.corrcoef(*ranks)[0, 1]
  assert metrics.METRIC_FUNCTIONS["pearson"](scores, 5 * predictions) == (
      pytest.approx(pearson, rel=1e-9))
  assert metrics.METRIC_FUNCTIONS["spearman"](scores, 5 * predictions) == (
      pytest.approx(spearman, rel=1e-9))


def _original_name(name):
  """Our variable name as the original's TF1 graph names it."""
  name = re.sub(r"^electra_classifier(_\d+)?/classification_head/",
                "task_specific/rte/", name)
  name = re.sub(r"^discriminator/layer_", "electra/encoder/layer_", name)
  return name.replace("discriminator/", "electra/")


def _originals_learning_rate(name, learning_rate, layer_decay, n_layers):
  """`optimization._get_layer_lrs` and `AdamWeightDecayOptimizer.
  apply_gradients` (a key that is a substring of the name picks the rate)."""
  key_to_depths = {"/embeddings/": 0, "/embeddings_project/": 0,
                   "task_specific/": n_layers + 2}
  for layer in range(n_layers):
    key_to_depths["encoder/layer_" + str(layer) + "/"] = layer + 1
  matches = [key for key in key_to_depths if key in name]
  assert len(matches) == 1, name
  return learning_rate * layer_decay**(n_layers + 2 - key_to_depths[matches[0]])


def test_the_default_decays_layer_by_layer_as_the_originals_get_layer_lrs():
  task = tasks.get_task("RTE")
  hyperparameters = trainer.FinetuneHyperparameters(
      learning_rate=1e-3, layerwise_decay_rate=0.5, warmup_proportion=0.0,
      weight_decay_rate=0.0)
  classifier = glue_family.build_classifier(step_run.TINY, task, hyperparameters)
  glue_family.compile_classifier(classifier, task, hyperparameters, num_train_steps=10)
  variables = classifier.trainable_variables
  before = [variable.numpy() for variable in variables]
  classifier.optimizer.apply_gradients(
      [(tf.ones_like(variable), variable) for variable in variables])
  # AdamWeightDecayOptimizer._apply_gradients, first step on a gradient of
  # ones: m = 0.1, v = 0.001, update = m / (sqrt(v) + 1e-6), no bias
  # correction; schedule at step 0 without warm-up: the peak rate.
  unit_update = 0.1 / (0.001**0.5 + 1e-6)
  for variable, initial in zip(variables, before):
    expected = unit_update * _originals_learning_rate(
        _original_name(variable.name.split(":")[0]), 1e-3, 0.5,
        step_run.TINY.num_layers)
    np.testing.assert_allclose(initial - variable.numpy(),
                               np.full(initial.shape, expected), rtol=1e-3,
                               err_msg=variable.name)
