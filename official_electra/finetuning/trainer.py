"""Fine-tunes a pretrained ELECTRA discriminator on one GLUE task, over seeds.

The recipe (Clark et al., 2020, Section 4 and Appendix A; ELECTRA_REFERENCE.md
Section 4): `[CLS]` -> dropout -> dense head, cross-entropy (squared error for
STS-B), the original AdamW (eps 1e-6, weight decay 0.01, no bias correction),
warm-up over the first 10% of steps then linear decay to 0, layer-wise
learning-rate decay, gradient global norm clipped to 1.0, batch 32, Keras
`compile`/`fit`. Where the authors' code and the paper differ (the loss's
reduction, STS-B's target scale, the decay rule, Small's learning rate), the
`recipe` decides (`recipes.py`).

Layout of a task's output directory:

    <task_dir>/eval_results.json     per-seed metrics, their median, the chosen seed
    <task_dir>/seed_<s>/             one fine-tuning run
        finetuned_model.json, vocab.txt, checkpoint/   (what export reads)
        eval_results.json, predictions/<TASK>.tsv, logs/ (TensorBoard)
        train_checkpoints/          while training: periodic checkpoints to
                                    resume from (`resumable_training.py`);
                                    deleted once the seed is done
"""

import dataclasses
import os
import sys
import time
from typing import Optional

from absl import logging
import numpy as np
import tensorflow as tf
import tf_keras

from official_electra import files
from official_electra import preemption
from official_electra.data import glue
from official_electra.finetuning import dev_metrics_callback
from official_electra.finetuning import inputs
from official_electra.finetuning import outputs
from official_electra.finetuning import recipes
from official_electra.finetuning import resumable_training
from official_electra.finetuning import tasks
from official_electra.modeling import checkpoints
from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import pretrained
from official_electra.modeling.models import electra_classifier
from official_electra.optimization import optimizer_factory

CHECKPOINT_PREFIX = classifier_checkpoint.CHECKPOINT_PREFIX
TRAIN_CHECKPOINT_DIR = "train_checkpoints"
VOCAB_FILE = classifier_checkpoint.VOCAB_FILE


@dataclasses.dataclass(frozen=True)
class FinetuneHyperparameters:
  """The fine-tuning recipe; defaults are ELECTRA-Small's under `recipe`.

  The fields marked (recipe) take the recipe's value when left at None
  (`recipes.py`); a value given for one wins. They are filled when the object
  is built, so `dataclasses.replace(h, recipe=...)` keeps `h`'s filled values:
  build a new object to switch recipes.

  Attributes:
    recipe: `original_code` (the authors' code as it ran, behind the quoted
      medians; the default) or `paper` (Table 7).
    learning_rate: (recipe) peak learning rate: Small 1e-4 (original_code) or
      3e-4 (paper); `gin/glue/base.gin` binds 1e-4, `large.gin` 5e-5.
    layerwise_decay_rate: 0.8 for Small and Base, 0.9 for Large.
    layerwise_decay_rule: (recipe) `original_code` or `paper`; see
      `optimization/layerwise_decay.py`.
    loss_reduction: (recipe) `sum` (original_code) or `mean` (paper) of the
      per-example losses over the (global) batch; the gradient of that loss
      is what `gradient_clip_norm` clips.
    scale_regression_targets: (recipe) train a regression task on its scores
      divided by its maximum score (STS-B: 5; original_code); dev metrics,
      predictions and the saved model are in the task's units either way.
    batch_size: training batch size.
    eval_batch_size: batch size for dev and test prediction.
    num_train_epochs: None for the task's recipe (10 RTE/STS-B, 3 otherwise).
    warmup_proportion: fraction of steps of linear warm-up.
    weight_decay_rate: decoupled weight decay (0.01 as in the original code).
    dropout_rate: dropout of the classification head.
    gradient_clip_norm: global-norm gradient clipping.
    max_seq_length: packed sequence length.
    max_train_examples: if set, train on the first this many examples of the
      shuffled training set (for quick runs); None uses all.
    save_checkpoints_steps: write a training checkpoint every this many
      steps (and at the end of training) to resume from after a kill.
    keep_checkpoint_max: training checkpoints kept (the latest ones).
  """
  recipe: str = recipes.DEFAULT_RECIPE
  learning_rate: Optional[float] = None
  layerwise_decay_rate: float = 0.8
  layerwise_decay_rule: Optional[str] = None
  loss_reduction: Optional[str] = None
  scale_regression_targets: Optional[bool] = None
  batch_size: int = 32
  eval_batch_size: int = 128
  num_train_epochs: Optional[int] = None
  warmup_proportion: float = 0.1
  weight_decay_rate: float = 0.01
  dropout_rate: float = 0.1
  gradient_clip_norm: float = 1.0
  max_seq_length: int = 128
  max_train_examples: Optional[int] = None
  save_checkpoints_steps: int = 500
  keep_checkpoint_max: int = 2

  def __post_init__(self):
    """Fills the (recipe) fields left at None; raises ValueError for an
    unknown recipe."""
    for name, value in recipes.recipe_values(self.recipe).items():
      if getattr(self, name) is None:
        object.__setattr__(self, name, value)  # Frozen: filled once, here.


@dataclasses.dataclass
class EncodedTask:
  """A task's splits as packed inputs (see `inputs.encode_examples`).

  Attributes:
    task: the GlueTask.
    train_features, train_labels: training inputs `[n, seq]` and labels `[n]`.
    dev_sets: `{split: (features, labels)}`.
    test_sets: `{split: (features, example_ids)}`.
  """
  task: tasks.GlueTask
  train_features: dict
  train_labels: np.ndarray
  dev_sets: dict
  test_sets: dict


def encode_task(task: tasks.GlueTask, glue_dir: str, tokenizer,
                hyperparameters: FinetuneHyperparameters,
                with_test: bool = True) -> EncodedTask:
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
  return EncodedTask(
      task=task,
      train_features=inputs.encode_examples(train_examples, tokenizer,
                                            max_seq_length),
      train_labels=task.encode_labels(train_examples),
      dev_sets=dev_sets,
      test_sets=test_sets)


def build_encoder(encoder_config: encoder_config_lib.EncoderConfig,
                  init_checkpoint: Optional[str] = None):
  """A built `ElectraEncoder` of `encoder_config`, restored from
  `init_checkpoint` if given (`pretrained.load_encoder`, the loader of the
  Python API's `official_electra.load_encoder`)."""
  if init_checkpoint:
    encoder = pretrained.load_encoder(init_checkpoint, config=encoder_config)
    logging.info("restored the discriminator from %s", init_checkpoint)
    return encoder
  encoder = encoder_config_lib.build_encoder(encoder_config)
  encoder({key: tf.zeros([1, 2], tf.int32) for key in
           ("input_word_ids", "input_mask", "input_type_ids")})
  return encoder


def build_classifier(encoder_config: encoder_config_lib.EncoderConfig,
                     task: tasks.GlueTask,
                     hyperparameters: FinetuneHyperparameters,
                     init_checkpoint: Optional[str] = None
                     ) -> electra_classifier.ElectraClassifier:
  """A built classifier, its encoder restored from `init_checkpoint` if given."""
  return classifier_checkpoint.build_classifier(
      encoder_config, task.num_outputs, hyperparameters.dropout_rate,
      gradient_clip_norm=hyperparameters.gradient_clip_norm,
      encoder=build_encoder(encoder_config, init_checkpoint))


def _compile(classifier, task, hyperparameters, num_train_steps):
  optimizer = optimizer_factory.create_finetuning_optimizer(
      num_layers=classifier.encoder.num_layers,
      peak_learning_rate=hyperparameters.learning_rate,
      num_train_steps=num_train_steps,
      warmup_proportion=hyperparameters.warmup_proportion,
      weight_decay_rate=hyperparameters.weight_decay_rate,
      layerwise_decay_rate=hyperparameters.layerwise_decay_rate,
      layerwise_decay_rule=hyperparameters.layerwise_decay_rule)
  metrics = ([] if task.is_regression else
             [tf_keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
  classifier.compile(optimizer=optimizer,
                     loss=recipes.task_loss(task,
                                            hyperparameters.loss_reduction),
                     metrics=metrics)


def save_finetuned_model(classifier, run_dir, task, encoder_config,
                       hyperparameters, tokenizer):
  """The checkpoint and what export needs to rebuild and tokenize: the
  project's model config (the encoder, the vocabulary's ids and case, the
  sequence length) and `finetuned_model.json` (the task's head), written by
  `classifier_checkpoint.save_classifier` (as the Python API's
  `official_electra.save_classifier`)."""
  del encoder_config  # The classifier's encoder records it.
  classifier_checkpoint.save_classifier(
      classifier, run_dir, tokenizer, hyperparameters.max_seq_length,
      task.name, task.labels, task.is_pair_task)


def _train(classifier, encoded, hyperparameters, seed, run_dir, num_epochs,
           steps_per_epoch, dev_callback, target_divisor):
  """Trains from the latest training checkpoint (or from scratch) to the end,
  on the training labels divided by `target_divisor`.

  Raises:
    preemption.Preempted: on SIGTERM, after a checkpoint.
  """
  task = encoded.task
  total_steps = steps_per_epoch * num_epochs
  train_checkpoints = resumable_training.TrainingCheckpoints(
      classifier, os.path.join(run_dir, TRAIN_CHECKPOINT_DIR),
      hyperparameters.save_checkpoints_steps,
      hyperparameters.keep_checkpoint_max)
  start_step = train_checkpoints.restore_latest()
  if start_step > total_steps:
    raise checkpoints.CheckpointError(
        f"{train_checkpoints.latest}: step {start_step} is past this run's "
        f"{total_steps} steps (the epochs, batch size or data changed): "
        f"delete {os.path.dirname(train_checkpoints.latest)} to restart this "
        "seed, or use a new --model_dir")
  if start_step:
    logging.info("%s seed %d: resuming from step %d of %d (%s)", task.name,
                 seed, start_step, total_steps, train_checkpoints.latest)
  log_dir = os.path.join(run_dir, "logs")
  train_labels = encoded.train_labels
  if target_divisor != 1.0:
    train_labels = (train_labels / target_divisor).astype(np.float32)
  with preemption.SigtermFlag() as sigterm:
    checkpoint_callback = preemption.CheckpointCallback(
        train_checkpoints, sigterm, f"{task.name} seed {seed}", total_steps)
    for epoch in range(start_step // steps_per_epoch, num_epochs):
      train_dataset = inputs.make_training_dataset(
          encoded.train_features, train_labels,
          hyperparameters.batch_size, seed, epoch,
          skip_batches=max(0, start_step - epoch * steps_per_epoch))
      classifier.fit(
          train_dataset, initial_epoch=epoch, epochs=epoch + 1,
          callbacks=[checkpoint_callback, dev_callback,
                     tf_keras.callbacks.TensorBoard(log_dir=log_dir),
                     resumable_training.EpochProgress(num_epochs)],
          verbose=1 if sys.stdout.isatty() else 2)
    checkpoint_callback.finish()
  if start_step == total_steps:  # Killed after training, before the results.
    dev_callback.set_model(classifier)
    dev_callback.latest_metrics = dev_callback.evaluate()


def finetune_seed(encoded: EncodedTask, encoder_config, init_checkpoint,
                  hyperparameters: FinetuneHyperparameters, tokenizer,
                  seed: int, run_dir: str) -> dict:
  """Fine-tunes once and writes `run_dir` (see the module docstring).

  Resumes from `run_dir`'s latest training checkpoint if there is one (the
  same result as an uninterrupted run).

  Returns:
    `{metric_key: value}` on the dev splits after the last epoch.

  Raises:
    preemption.Preempted: on SIGTERM during training, after writing a
      checkpoint; calling again resumes from it.
  """
  task = encoded.task
  tf_keras.utils.set_random_seed(seed)
  # Dropout draws from tf.random.Generators, whose state checkpoints hold.
  tf_keras.backend.experimental.enable_tf_random_generator()
  classifier = build_classifier(encoder_config, task, hyperparameters,
                                init_checkpoint)
  num_epochs = hyperparameters.num_train_epochs or task.num_train_epochs
  steps_per_epoch = len(encoded.train_labels) // hyperparameters.batch_size
  _compile(classifier, task, hyperparameters, steps_per_epoch * num_epochs)
  dev_sets = {split: (inputs.make_dataset(features, None,
                                          hyperparameters.eval_batch_size),
                      labels)
              for split, (features, labels) in encoded.dev_sets.items()}
  target_divisor = recipes.regression_target_divisor(
      task, hyperparameters.scale_regression_targets)
  dev_callback = dev_metrics_callback.DevMetricsCallback(
      task, dev_sets, os.path.join(run_dir, "logs"),
      score_multiplier=target_divisor)
  start = time.time()
  _train(classifier, encoded, hyperparameters, seed, run_dir, num_epochs,
         steps_per_epoch, dev_callback, target_divisor)
  train_seconds = time.time() - start
  if target_divisor != 1.0:
    # Test predictions, the saved model and its export predict the scores.
    recipes.scale_regression_output(classifier, target_divisor)
  for split, submission_file in zip(task.test_splits, task.submission_files):
    if split not in encoded.test_sets:
      continue
    features, example_ids = encoded.test_sets[split]
    model_outputs = classifier.predict(
        inputs.make_dataset(features, None, hyperparameters.eval_batch_size),
        verbose=0)
    predictions = dev_metrics_callback.predictions_from_outputs(task,
                                                                model_outputs)
    outputs.write_submission(
        os.path.join(run_dir, "predictions", submission_file), example_ids,
        task.prediction_strings(predictions))
  save_finetuned_model(classifier, run_dir, task, encoder_config, hyperparameters,
                     tokenizer)
  metrics = dev_callback.latest_metrics
  files.write_json(os.path.join(run_dir, outputs.EVAL_RESULTS_FILE), {
      "task": task.name, "seed": seed, "metrics": metrics,
      "num_train_examples": len(encoded.train_labels),
      "num_train_steps": steps_per_epoch * num_epochs,
      "train_seconds": round(train_seconds, 1),
      "hyperparameters": dataclasses.asdict(hyperparameters)})
  files.remove_tree(os.path.join(run_dir, TRAIN_CHECKPOINT_DIR))
  return metrics


def finetune_task(task_name: str, glue_dir: str, tokenizer, encoder_config,
                  init_checkpoint: Optional[str],
                  hyperparameters: FinetuneHyperparameters, num_seeds: int,
                  model_dir: str, with_test: bool = True) -> dict:
  """Fine-tunes `num_seeds` times on one task and summarises the seeds.

  `with_test=False` skips the test splits (no submission files), for studies
  that read the dev scores only.

  A seed whose `eval_results.json` already exists is not rerun; an
  interrupted seed resumes from its latest training checkpoint. Test predictions of the seed with
  the median score are copied to `<model_dir>/submission/`.

  Returns:
    The task summary (see `outputs.summarize_seeds`), also written to
    `<model_dir>/<task>/eval_results.json`.
  """
  task = tasks.get_task(task_name)
  task_dir = os.path.join(model_dir, task.name)
  encoded = None
  seed_metrics = {}
  for seed in range(num_seeds):
    run_dir = os.path.join(task_dir, f"seed_{seed}")
    results_path = os.path.join(run_dir, outputs.EVAL_RESULTS_FILE)
    if tf.io.gfile.exists(results_path):
      seed_metrics[seed] = files.read_json(results_path)["metrics"]
      logging.info("%s seed %d: already done, reusing %s", task.name, seed,
                   results_path)
      continue
    if encoded is None:
      encoded = encode_task(task, glue_dir, tokenizer, hyperparameters,
                            with_test)
    seed_metrics[seed] = finetune_seed(encoded, encoder_config, init_checkpoint,
                                       hyperparameters, tokenizer, seed, run_dir)
  summary = outputs.summarize_seeds(seed_metrics, task.score_key)
  summary["task"] = task.name
  files.write_json(os.path.join(task_dir, outputs.EVAL_RESULTS_FILE), summary)
  selected_dir = os.path.join(task_dir, f"seed_{summary['selected_seed']}",
                              "predictions")
  for submission_file in task.submission_files:
    source = os.path.join(selected_dir, submission_file)
    if tf.io.gfile.exists(source):
      with tf.io.gfile.GFile(source) as prediction_file:
        files.write_text(
            os.path.join(model_dir, "submission", submission_file),
            prediction_file.read())
  return summary
