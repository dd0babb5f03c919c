"""The study's probes of frozen encoders (`linear_probe`): a linear model on
each encoder's features, fitted and scored per task, to tell what
pretraining learned from how well the weights fine-tune.

Two measures: `dev_probe` (fitted on the training set, scored on the dev
set) and `selection_probe` (fitted and scored on two halves of a training
sample, which never reads a dev set: the one that may choose between runs).
Each encoder's result per task is cached as JSON in its probe folder.
"""

import os

import tf_keras

from official_electra import files
from official_electra.data import glue
from official_electra.experiments import linear_probe
from official_electra.finetuning import glue_family
from official_electra.finetuning import tasks as tasks_lib
from official_electra.finetuning import trainer
from official_electra.modeling import pretrained

# Folders of the study's output_dir holding each probe's results.
PROBE_DIR = "probe"
SELECTION_PROBE_DIR = "selection_probe"


def dev_probe(glue_dir, tokenizer, hyperparameters):
  """`measure(network, task_name)`: the dev-set probe (`probe_task`)."""
  encoded = {}

  def measure(network, task_name):
    if task_name not in encoded:
      encoded[task_name] = glue_family.encode_task(
          tasks_lib.get_task(task_name), glue_dir, tokenizer, hyperparameters,
          with_test=False)
    return linear_probe.probe_task(network, encoded[task_name])
  return measure


def selection_probe(glue_dir, tokenizer, hyperparameters):
  """`measure(network, task_name)`: the probe on two halves of a training
  sample (`probe_training_split`), which never reads a dev set."""
  examples = {}

  def measure(network, task_name):
    if task_name not in examples:
      examples[task_name] = glue.read_split(glue_dir, task_name, "train")
    return linear_probe.probe_training_split(
        network, tasks_lib.get_task(task_name), examples[task_name],
        tokenizer, hyperparameters.max_seq_length)
  return measure


def probe_encoders(encoders, random_encoder, task_names, measure, probe_dir, log):
  """`measure(network, task_name)` of every encoder on every task, each
  cached in `probe_dir/<encoder>/<TASK>.json`; one row per feature.

  `encoders`: the study's encoders (`id`, `variant`, `step`, `train_flops`,
  `kept_dir`, `tower`); `random_encoder`: the `EncoderConfig` of the one
  without a kept checkpoint.
  """
  rows = []
  for study_encoder in encoders:
    network = None
    for task_name in task_names:
      path = os.path.join(probe_dir, study_encoder.id, f"{task_name}.json")
      if files.exists(path):
        task_metrics = files.read_json(path)
      else:
        if network is None:
          network = frozen_encoder(random_encoder, study_encoder)
        task_metrics = measure(network, task_name)
        files.write_json(path, task_metrics)
      score_key = tasks_lib.get_task(task_name).score_key
      for feature, values in task_metrics.items():
        rows.append({"variant": study_encoder.variant,
                     "step": study_encoder.step,
                     "train_flops": study_encoder.train_flops,
                     "task": task_name,
                     "feature": feature, "metric": score_key,
                     "score": values[score_key]})
      log(f"[study] probed {study_encoder.id} on {task_name} "
          f"({os.path.basename(probe_dir)}): " + ", ".join(
              f"{feature} {values[score_key]:.4f}"
              for feature, values in task_metrics.items()))
  return rows


def frozen_encoder(random_encoder, study_encoder):
  """The kept checkpoint's tower, or a random encoder (seed 0)."""
  if study_encoder.kept_dir is None:
    tf_keras.utils.set_random_seed(0)
    return trainer.build_encoder(random_encoder)
  return pretrained.load_encoder(study_encoder.kept_dir,
                                 tower=study_encoder.tower)
