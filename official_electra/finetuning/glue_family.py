"""GLUE classification and regression, as a task family of the seed loop.

The recipe (Clark et al., 2020, Section 4 and Appendix A; ELECTRA_REFERENCE.md
Section 4): `[CLS]` -> dropout -> dense head, cross-entropy (squared error for
STS-B), summed or averaged over the batch as the recipe says
(`recipes.py`). The task's facts (labels, metrics, epochs, swapped pairs)
are `tasks.py`'s; its files `data/glue.py`'s; the head
`layers/classification_head.py`'s. Outputs of a seed: the dev metrics and,
for each test split present, a GLUE submission file under
`<run_dir>/predictions/`.
"""

import dataclasses
import os
from typing import Optional

from absl import logging
import numpy as np
import tf_keras

from official_electra.data import glue
from official_electra.finetuning import inputs
from official_electra.finetuning import outputs
from official_electra.finetuning import recipes
from official_electra.finetuning import task_family
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling.models import electra_classifier


@dataclasses.dataclass
class EncodedGlueTask(task_family.EncodedTask):
  """A GLUE task's splits as packed inputs (see `inputs.encode_examples`).

  Attributes:
    task: the GlueTask.
    dev_sets: `{split: (features, labels)}`.
    test_sets: `{split: (features, example_ids)}`.
  """
  task: Optional[tasks.GlueTask] = None
  dev_sets: dict = dataclasses.field(default_factory=dict)
  test_sets: dict = dataclasses.field(default_factory=dict)


def encode_task(task: tasks.GlueTask, glue_dir: str, tokenizer,
                hyperparameters, with_test: bool = True) -> EncodedGlueTask:
  """Reads a task's train, dev and (if `with_test`) test files and packs them.

  Test files that are absent are skipped (with a warning); train and dev files
  are required. Raises glue.GlueDataError for missing or malformed files, and
  for a training set smaller than one batch.
  """
  max_seq_length = hyperparameters.max_seq_length
  train_examples = glue.read_split(glue_dir, task.name, "train")
  if hyperparameters.max_train_examples is not None:
    order = np.random.default_rng(0).permutation(len(train_examples))
    train_examples = [train_examples[i]
                      for i in order[:hyperparameters.max_train_examples]]
  if task.train_on_swapped_pairs:
    train_examples = inputs.swap_pairs(train_examples)
  if len(train_examples) < hyperparameters.batch_size:
    raise glue.GlueDataError(
        f"{glue.split_path(glue_dir, task.name, 'train')}: "
        f"{len(train_examples)} training examples make no batch of "
        f"{hyperparameters.batch_size}; check the file or lower "
        "glue_hyperparameters.batch_size")
  dev_sets = {}
  for split in task.dev_splits:
    examples = glue.read_split(glue_dir, task.name, split)
    dev_sets[split] = (inputs.encode_examples(examples, tokenizer, max_seq_length),
                       task.encode_labels(examples))
  test_sets = {}
  for split in task.test_splits if with_test else ():
    if not os.path.isfile(glue.split_path(glue_dir, task.name, split)):
      logging.warning("%s: no %s split, so no submission file for it",
                      task.name, split)
      continue
    examples = glue.read_split(glue_dir, task.name, split)
    test_sets[split] = (inputs.encode_examples(examples, tokenizer, max_seq_length),
                        [example.example_id for example in examples])
  return EncodedGlueTask(
      task=task,
      train_features=inputs.encode_examples(train_examples, tokenizer,
                                            max_seq_length),
      train_labels=task.encode_labels(train_examples),
      dev_sets=dev_sets,
      test_sets=test_sets)


def build_classifier(encoder_config: encoder_config_lib.EncoderConfig,
                     task: tasks.GlueTask, hyperparameters,
                     init_checkpoint: Optional[str] = None
                     ) -> electra_classifier.ElectraClassifier:
  """A built classifier, its encoder restored from `init_checkpoint` if given."""
  return _classifier_on(trainer.build_encoder(encoder_config, init_checkpoint),
                        task,
                        hyperparameters)


def _classifier_on(encoder, task, hyperparameters):
  return classifier_checkpoint.build_classifier(
      None, task.num_outputs, hyperparameters.dropout_rate,
      gradient_clip_norm=hyperparameters.gradient_clip_norm, encoder=encoder)


def compile_classifier(classifier, task: tasks.GlueTask, hyperparameters,
                       num_train_steps: int) -> None:
  """Compiles with the seed loop's optimizer (`trainer.create_optimizer`),
  the task's loss and metrics: what the seed loop does, for benchmarks and
  tests."""
  GlueFamily(task.name, glue_dir=None).compile_model(
      classifier, trainer.create_optimizer(
          hyperparameters, classifier.encoder.num_layers, num_train_steps),
      hyperparameters)


def predictions_from_outputs(task: tasks.GlueTask, model_outputs: np.ndarray,
                             score_multiplier: float = 1.0) -> np.ndarray:
  """Class ids `[n]` (argmax of the logits) or scores `[n]` from
  `[n, num_outputs]`.

  `score_multiplier` turns a regression output into the task's score units
  (5 for a model trained on STS-B's scores divided by 5).
  """
  if task.is_regression:
    return model_outputs[:, 0] * score_multiplier
  return np.argmax(model_outputs, axis=-1)


class GlueFamily(task_family.TaskFamily):
  """One GLUE task, read from `glue_dir` (the GLUE download script's layout).

  Args:
    task_name: a GLUE task name (`tasks.get_task`).
    glue_dir: the folder of the task folders.
  """

  def __init__(self, task_name: str, glue_dir: Optional[str]):
    self.task = tasks.get_task(task_name)
    self.glue_dir = glue_dir
    self.name = self.task.name
    self.score_key = self.task.score_key
    self.num_train_epochs = self.task.num_train_epochs
    self.submission_files = tuple(self.task.submission_files)

  def encode(self, tokenizer, hyperparameters, with_test):
    return encode_task(self.task, self.glue_dir, tokenizer, hyperparameters,
                       with_test)

  def build_model(self, encoder, hyperparameters):
    return _classifier_on(encoder, self.task, hyperparameters)

  def compile_model(self, model, optimizer, hyperparameters):
    metrics = ([] if self.task.is_regression else
               [tf_keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
    model.compile(optimizer=optimizer,
                  loss=recipes.task_loss(self.task,
                                         hyperparameters.loss_reduction),
                  metrics=metrics)

  def _target_divisor(self, hyperparameters):
    return recipes.regression_target_divisor(
        self.task, hyperparameters.scale_regression_targets)

  def training_labels(self, encoded, hyperparameters):
    divisor = self._target_divisor(hyperparameters)
    if divisor == 1.0:
      return encoded.train_labels
    return (encoded.train_labels / divisor).astype(np.float32)

  def evaluate(self, model, encoded, hyperparameters):
    # Called during training, while the output layer still predicts the
    # scores divided by the recipe's divisor.
    multiplier = self._target_divisor(hyperparameters)
    results = {}
    for split, (features, labels) in encoded.dev_sets.items():
      model_outputs = model.predict(
          inputs.make_dataset(features, None, hyperparameters.eval_batch_size),
          verbose=0)
      results.update(self.task.compute_metrics(
          split, labels, predictions_from_outputs(self.task, model_outputs,
                                                  multiplier)))
    return results

  def finish_training(self, model, hyperparameters):
    divisor = self._target_divisor(hyperparameters)
    if divisor != 1.0:
      # Test predictions, the saved model and its export predict the scores.
      recipes.scale_regression_output(model, divisor)

  def write_predictions(self, model, encoded, hyperparameters, run_dir):
    for split, submission_file in zip(self.task.test_splits,
                                      self.task.submission_files):
      if split not in encoded.test_sets:
        continue
      features, example_ids = encoded.test_sets[split]
      model_outputs = model.predict(
          inputs.make_dataset(features, None, hyperparameters.eval_batch_size),
          verbose=0)
      outputs.write_submission(
          os.path.join(run_dir, "predictions", submission_file), example_ids,
          self.task.prediction_strings(
              predictions_from_outputs(self.task, model_outputs)))

  def describe(self, model, hyperparameters):
    del hyperparameters
    return classifier_checkpoint.head_description(
        model, self.task.name, self.task.labels, self.task.is_pair_task)
