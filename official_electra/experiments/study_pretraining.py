"""The study's pretraining side: its data, its runs and their kept
checkpoints.

`prepare_data` builds (or reuses) the vocabulary and records; `pretrain` runs
a variant's plan (`study_plan.PretrainingPlan`) to each kept step, resuming,
and `keep_checkpoint` copies each kept step to `<model_dir>/kept/step_<n>/`
with its pretraining metrics (published last, so `is_kept` never sees an
unfinished folder). `--pretrained_from` reads another study's kept steps
(`pretrained_vocab`, `check_pretrained`).
"""

import contextlib
import os
import statistics
import time

import tensorflow as tf
import tf_keras

from official_electra import files
from official_electra.experiments import study_plan
from official_electra.experiments import training_curves
from official_electra.modeling import checkpoints
from official_electra.training import pretraining_run
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab

KEPT_DIR = "kept"
PRETRAINING_METRICS_FILE = "pretraining_metrics.json"
# Pretraining metrics at a kept step: the mean of this many last log records.
_METRIC_RECORDS = 10


def prepare_data(corpus, output_dir, settings, vocab_file=None, log=print):
  """Builds (or reuses) the vocabulary and records; returns their paths.

  The dataset build recognises a finished dataset of the same inputs and flags
  (`dataset_info.json`) and returns it without rereading the corpus.
  """
  if vocab_file is None:
    vocab_file = os.path.join(output_dir, "vocab.txt")
    if not tf.io.gfile.exists(vocab_file):
      log(f"vocabulary: learning up to {settings.vocab_size} WordPiece tokens "
          f"from {corpus}")
      # Written through a temporary name (`files.write_text`).
      build_vocab.build_vocab(corpus, vocab_file, settings.vocab_size,
                              settings.lower_case, settings.vocab_max_words)
  data_dir = os.path.join(output_dir, "data")
  log(f"records: {corpus} -> {data_dir}")
  build_pretraining_dataset.build_pretraining_dataset(
      corpus, vocab_file, data_dir,
      max_seq_length=settings.pretraining["max_seq_length"],
      lower_case=settings.lower_case, num_shards=settings.num_shards,
      num_workers=min(2, os.cpu_count() or 1))
  return vocab_file, data_dir


def pretrained_vocab(source_dir):
  """The vocabulary of the study in `source_dir` (`pretrained_from`)."""
  vocab_file = os.path.join(source_dir, "vocab.txt")
  if not files.exists(vocab_file):
    raise study_plan.StudyConfigError(
        f"{source_dir}: no vocab.txt, so not a study's output_dir; pass "
        "--pretrained_from=<the output_dir of a study that pretrained>")
  return vocab_file


def check_pretrained(source_dir, plans):
  """Every kept checkpoint `plans` need exists in `source_dir`.

  Raises:
    StudyConfigError: naming the first missing one.
  """
  for plan in plans:
    for step in plan.checkpoint_steps:
      kept_dir = kept_folder(os.path.join(source_dir, "pretrain", plan.name),
                           step)
      if not is_kept(kept_dir):
        raise study_plan.StudyConfigError(
            f"{kept_dir}: not kept, so --pretrained_from={source_dir} cannot "
            f"give {plan.name} at step {step}: finish that study first, or "
            "use its variants, pretraining settings, budget and checkpoint "
            "fractions")


def _pretraining_metrics_at(model_dir, step):
  """Mean of the last logged metrics up to `step`."""
  records = [record for record in training_curves.read_metrics_log(model_dir)
             if record["step"] <= step][-_METRIC_RECORDS:]
  names = [name for name in records[-1] if name not in (
      "step", "learning_rate", "examples_per_second", "tokens_per_second",
      "train_flops", "flops_count")]
  return {name: statistics.fmean(record[name] for record in records
                                 if name in record) for name in names}


def kept_folder(model_dir, step):
  """Where `keep_checkpoint` keeps `model_dir`'s step `step`."""
  return os.path.join(model_dir, KEPT_DIR, f"step_{step}")


def is_kept(kept_dir):
  """Whether `kept_dir` is complete: its metrics file is published last."""
  return files.exists(os.path.join(kept_dir, PRETRAINING_METRICS_FILE))


def keep_checkpoint(model_dir, step, metrics):
  """Copies `ckpt-<step>` and what describes it into `kept/step_<step>/`.

  The folder is built beside its final name and published whole
  (`files.publish_folder`: one rename locally; on object stores, which have
  no folder rename, file by file with the metrics file last, so `is_kept`
  never sees an unfinished folder).
  """
  kept_dir = kept_folder(model_dir, step)
  staging = files.staging_folder(kept_dir)
  prefix = f"ckpt-{step}"
  names = [os.path.basename(path) for path in
           files.glob(os.path.join(model_dir, prefix + ".*"))]
  names += [checkpoints.MODEL_CONFIG_FILE, pretraining_run.VOCAB_FILE]
  for name in names:
    files.copy(os.path.join(model_dir, name), os.path.join(staging, name))
  # The state file names the prefix relative to its folder, so the folder
  # can be renamed or copied (TensorFlow's `update_checkpoint_state` makes
  # a wrong relative path of a URL such as `ram://`).
  files.write_text(os.path.join(staging, "checkpoint"),
                   f'model_checkpoint_path: "{prefix}"\n'
                   f'all_model_checkpoint_paths: "{prefix}"\n')
  files.write_json(os.path.join(staging, PRETRAINING_METRICS_FILE),
                   {"step": step, **metrics})
  files.publish_folder(staging, kept_dir, last=PRETRAINING_METRICS_FILE)
  return kept_dir


def pretrain(plan, model_dir, data_dir, vocab_file, encoder, strategy,
             progress):
  """Runs one variant to each kept step (its `kept_folder`), reporting to
  `progress` (a `study_progress.Progress`).

  Raises:
    preemption.Preempted: on SIGTERM, after pretraining's own checkpoint.
  """
  for step in plan.checkpoint_steps:
    kept_dir = kept_folder(model_dir, step)
    if not is_kept(kept_dir):
      started = time.monotonic()
      first_step = _latest_step(model_dir)
      with _dtype_policy(plan.settings.get("mixed_precision", "float32")):
        pretraining_run.run_pretraining(
            model_dir=model_dir, train_data=data_dir, vocab_file=vocab_file,
            encoder=encoder, strategy=strategy,
            num_train_steps=plan.num_train_steps, stop_after_steps=step,
            progress_bar=False, flops_count=plan.flops_count,
            **plan.settings)
      keep_checkpoint(model_dir, step,
                      _pretraining_metrics_at(model_dir, step))
      progress.pretrained(plan.train_flops_between(first_step, step),
                          time.monotonic() - started,
                          f"pretrained {plan.name} to step {step} of "
                          f"{plan.num_train_steps}")


@contextlib.contextmanager
def _dtype_policy(name):
  """Pretraining under the Keras policy `name`; fine-tuning stays float32."""
  previous = tf_keras.mixed_precision.global_policy()
  tf_keras.mixed_precision.set_global_policy(name)
  try:
    yield
  finally:
    tf_keras.mixed_precision.set_global_policy(previous)


def _latest_step(model_dir):
  latest = tf.train.latest_checkpoint(model_dir)
  return int(latest.rsplit("-", 1)[1]) if latest else 0


def pretraining_flops_left(plan, model_dir):
  """FLOPs of the steps not yet trained towards the kept steps still missing."""
  done = _latest_step(model_dir)
  left = 0
  for previous, step in zip((0,) + plan.checkpoint_steps[:-1],
                            plan.checkpoint_steps):
    if not is_kept(kept_folder(model_dir, step)):
      start = max(previous, done)
      left += plan.train_flops_between(start, max(start, step))
  return left
