"""The fine-tuning seed loop: any task family, over seeds.

What every task shares (Clark et al., 2020, Section 4 and Appendix A;
ELECTRA_REFERENCE.md Section 4): the original AdamW (eps 1e-6, weight decay
0.01, no bias correction), warm-up over the first 10% of steps then linear
decay to 0, layer-wise learning-rate decay, gradient global norm clipped to
1.0, batch 32, Keras `compile`/`fit`, dev metrics after every epoch, several
seeds and their median. Where the authors' code and the paper differ (the
loss's reduction, STS-B's target scale, the decay rule, Small's learning
rate), the `recipe` decides (`recipes.py`). What differs between tasks (data,
head, loss, metrics, prediction files) is the task family's
(`task_family.py`: GLUE in `glue_family.py`, SQuAD in `squad_family.py`).

Layout of a task's output directory:

    <task_dir>/eval_results.json     per-seed metrics, their median, the chosen seed
    <task_dir>/seed_<s>/             one fine-tuning run
        model_config.json, vocab.txt, checkpoint/   (the seed folder:
                                    modeling/finetuned_checkpoint.py; what
                                    export reads)
        eval_results.json, predictions/, logs/ (TensorBoard)
        train_checkpoints/          while training: periodic checkpoints to
                                    resume from (`resumable_training.py`);
                                    deleted once the seed is done
"""

import dataclasses
import os
import sys
import time
from typing import Callable, Optional

from absl import logging
import tensorflow as tf
import tf_keras

from official_electra import files
from official_electra import preemption
from official_electra.finetuning import dev_metrics_callback
from official_electra.finetuning import inputs
from official_electra.finetuning import outputs
from official_electra.finetuning import recipes
from official_electra.finetuning import resumable_training
from official_electra.finetuning import task_family
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import pretrained
from official_electra.optimization import optimizer_factory

CHECKPOINT_PREFIX = finetuned_checkpoint.CHECKPOINT_PREFIX
TRAIN_CHECKPOINT_DIR = "train_checkpoints"
VOCAB_FILE = finetuned_checkpoint.VOCAB_FILE


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
    num_train_epochs: None for the task's recipe (GLUE: 10 RTE/STS-B, 3
      otherwise; SQuAD: 2).
    warmup_proportion: fraction of steps of linear warm-up.
    weight_decay_rate: decoupled weight decay (0.01 as in the original code).
    dropout_rate: dropout of the classification head (GLUE; SQuAD's head
      has none, as the original's).
    gradient_clip_norm: global-norm gradient clipping.
    max_seq_length: packed sequence length (GLUE: 128; SQuAD's gin files
      bind 512, the original's).
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


def build_encoder(encoder_config: encoder_config_lib.EncoderConfig,
                  init_checkpoint: Optional[str] = None,
                  tower: str = "discriminator"):
  """A built `ElectraEncoder` of `encoder_config`, restored from `tower`
  (`discriminator` or `generator`) of `init_checkpoint` if given
  (`pretrained.load_encoder`, the loader of the Python API's
  `official_electra.load_encoder`)."""
  if init_checkpoint:
    encoder = pretrained.load_encoder(init_checkpoint, tower=tower,
                                      config=encoder_config)
    logging.info("restored the %s from %s", tower, init_checkpoint)
    return encoder
  encoder = encoder_config_lib.build_encoder(encoder_config)
  encoder({key: tf.zeros([1, 2], tf.int32) for key in
           ("input_word_ids", "input_mask", "input_type_ids")})
  return encoder


def create_optimizer(hyperparameters: FinetuneHyperparameters,
                     num_layers: int, num_train_steps: int):
  """The recipe's optimizer: the original AdamW, warm-up then linear decay,
  layer-wise decay over an encoder of `num_layers` blocks
  (`optimizer_factory.create_finetuning_optimizer`)."""
  return optimizer_factory.create_finetuning_optimizer(
      num_layers=num_layers,
      peak_learning_rate=hyperparameters.learning_rate,
      num_train_steps=num_train_steps,
      warmup_proportion=hyperparameters.warmup_proportion,
      weight_decay_rate=hyperparameters.weight_decay_rate,
      layerwise_decay_rate=hyperparameters.layerwise_decay_rate,
      layerwise_decay_rule=hyperparameters.layerwise_decay_rule)


def _train(model, family, encoded, hyperparameters, seed, run_dir,
           num_epochs, steps_per_epoch, dev_callback):
  """Trains from the latest training checkpoint (or from scratch) to the end.

  Raises:
    preemption.Preempted: on SIGTERM, after a checkpoint.
  """
  total_steps = steps_per_epoch * num_epochs
  train_checkpoints = resumable_training.TrainingCheckpoints(
      model, os.path.join(run_dir, TRAIN_CHECKPOINT_DIR),
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
    logging.info("%s seed %d: resuming from step %d of %d (%s)", family.name,
                 seed, start_step, total_steps, train_checkpoints.latest)
  log_dir = os.path.join(run_dir, "logs")
  train_labels = family.training_labels(encoded, hyperparameters)
  with preemption.SigtermFlag() as sigterm:
    checkpoint_callback = preemption.CheckpointCallback(
        train_checkpoints, sigterm, f"{family.name} seed {seed}", total_steps)
    for epoch in range(start_step // steps_per_epoch, num_epochs):
      train_dataset = inputs.make_training_dataset(
          encoded.train_features, train_labels,
          hyperparameters.batch_size, seed, epoch,
          skip_batches=max(0, start_step - epoch * steps_per_epoch))
      model.fit(
          train_dataset, initial_epoch=epoch, epochs=epoch + 1,
          callbacks=[checkpoint_callback, dev_callback,
                     tf_keras.callbacks.TensorBoard(log_dir=log_dir),
                     resumable_training.EpochProgress(num_epochs)],
          verbose=1 if sys.stdout.isatty() else 2)
    checkpoint_callback.finish()
  if start_step == total_steps:  # Killed after training, before the results.
    dev_callback.set_model(model)
    dev_callback.latest_metrics = dev_callback.evaluate()


def finetune_seed(family: task_family.TaskFamily,
                  encoded: task_family.EncodedTask, encoder_config,
                  init_checkpoint, hyperparameters: FinetuneHyperparameters,
                  tokenizer, seed: int, run_dir: str,
                  init_tower: str = "discriminator") -> dict:
  """Fine-tunes once and writes `run_dir` (see the module docstring).

  `init_tower`: the tower of `init_checkpoint` fine-tuned (`discriminator`,
  or an ELECTRA run's `generator`, at its own size).

  Resumes from `run_dir`'s latest training checkpoint if there is one (the
  same result as an uninterrupted run).

  Returns:
    `{metric_key: value}` on the dev data after the last epoch.

  Raises:
    preemption.Preempted: on SIGTERM during training, after writing a
      checkpoint; calling again resumes from it.
  """
  tf_keras.utils.set_random_seed(seed)
  # Dropout draws from tf.random.Generators, whose state checkpoints hold.
  tf_keras.backend.experimental.enable_tf_random_generator()
  model = family.build_model(
      build_encoder(encoder_config, init_checkpoint, init_tower),
      hyperparameters)
  num_epochs = hyperparameters.num_train_epochs or family.num_train_epochs
  steps_per_epoch = encoded.num_train_examples // hyperparameters.batch_size
  family.compile_model(
      model, create_optimizer(hyperparameters, model.encoder.num_layers,
                              steps_per_epoch * num_epochs),
      hyperparameters)
  dev_callback = dev_metrics_callback.DevMetricsCallback(
      family.name, lambda: family.evaluate(model, encoded, hyperparameters),
      os.path.join(run_dir, "logs"))
  start = time.time()
  _train(model, family, encoded, hyperparameters, seed, run_dir, num_epochs,
         steps_per_epoch, dev_callback)
  train_seconds = time.time() - start
  family.finish_training(model, hyperparameters)
  family.write_predictions(model, encoded, hyperparameters, run_dir)
  finetuned_checkpoint.save_finetuned(
      model, run_dir, tokenizer, hyperparameters.max_seq_length,
      family.describe(model, hyperparameters))
  metrics = dev_callback.latest_metrics
  files.write_json(os.path.join(run_dir, outputs.EVAL_RESULTS_FILE), {
      "task": family.name, "seed": seed, "metrics": metrics,
      "num_train_examples": encoded.num_train_examples,
      "num_train_steps": steps_per_epoch * num_epochs,
      "train_seconds": round(train_seconds, 1),
      "hyperparameters": dataclasses.asdict(hyperparameters)})
  files.remove_tree(os.path.join(run_dir, TRAIN_CHECKPOINT_DIR))
  return metrics


def finetune_task(family: task_family.TaskFamily, tokenizer, encoder_config,
                  init_checkpoint: Optional[str],
                  hyperparameters: FinetuneHyperparameters, num_seeds: int,
                  model_dir: str, with_test: bool = True,
                  init_tower: str = "discriminator",
                  encode: Optional[Callable[[], task_family.EncodedTask]] = None
                  ) -> dict:
  """Fine-tunes `num_seeds` times on one task and summarises the seeds.

  `with_test=False` skips the test splits (no submission files), for studies
  that read the dev scores only. `init_tower`: see `finetune_seed`.
  `encode`: called with no arguments when a seed is to be trained, returns
  the task's encoded splits as `family.encode(tokenizer, hyperparameters,
  with_test)` does (the default); a caller that comes back for one seed at a
  time passes one that keeps them.

  A seed whose `eval_results.json` already exists is not rerun; an
  interrupted seed resumes from its latest training checkpoint. The
  prediction files the family names (`submission_files`) of the seed with
  the median score are copied to `<model_dir>/submission/`.

  Returns:
    The task summary (see `outputs.summarize_seeds`), also written to
    `<model_dir>/<task>/eval_results.json`.
  """
  task_dir = os.path.join(model_dir, family.name)
  encoded = None
  seed_metrics = {}
  for seed in range(num_seeds):
    run_dir = os.path.join(task_dir, f"seed_{seed}")
    results_path = os.path.join(run_dir, outputs.EVAL_RESULTS_FILE)
    if tf.io.gfile.exists(results_path):
      seed_metrics[seed] = files.read_json(results_path)["metrics"]
      logging.info("%s seed %d: already done, reusing %s", family.name, seed,
                   results_path)
      continue
    if encoded is None:
      encoded = (encode() if encode is not None
                 else family.encode(tokenizer, hyperparameters, with_test))
    seed_metrics[seed] = finetune_seed(family, encoded, encoder_config,
                                       init_checkpoint, hyperparameters,
                                       tokenizer, seed, run_dir, init_tower)
  summary = outputs.summarize_seeds(seed_metrics, family.score_key)
  summary["task"] = family.name
  files.write_json(os.path.join(task_dir, outputs.EVAL_RESULTS_FILE), summary)
  selected_dir = os.path.join(task_dir, f"seed_{summary['selected_seed']}",
                              "predictions")
  for submission_file in family.submission_files:
    source = os.path.join(selected_dir, submission_file)
    if tf.io.gfile.exists(source):
      with tf.io.gfile.GFile(source) as prediction_file:
        files.write_text(
            os.path.join(model_dir, "submission", submission_file),
            prediction_file.read())
  return summary
