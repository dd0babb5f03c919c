"""The study's fine-tuning: every encoder on every task, seed-major.

Seed 0 of every encoder and task comes before any seed 1, so a stopped
study already compares them all, and `results.json` (which carries the
study to another machine, `study_records`) is rewritten after every seed,
with every seed finished so far, those of later passes too.
A seed whose `eval_results.json` is there (finished here, or restored from
a record) is read, not trained again.
"""

import functools
import os
import time

import tensorflow as tf

from official_electra import files
from official_electra.finetuning import glue_family
from official_electra.finetuning import outputs
from official_electra.finetuning import trainer


def _results_path(finetune_dir, encoder_id, task_name, seed):
  return os.path.join(finetune_dir, encoder_id, task_name, f"seed_{seed}",
                      outputs.EVAL_RESULTS_FILE)


def runs_left(finetune_dir, encoder_ids, task_names, num_seeds):
  """Fine-tuning runs of these encoders and tasks not finished yet."""
  return sum(
      not tf.io.gfile.exists(_results_path(finetune_dir, encoder_id, task,
                                           seed))
      for encoder_id in encoder_ids for task in task_names
      for seed in range(num_seeds))


def _finished_seeds(finetune_dir, encoder_id, task_name, num_seeds,
                    score_key):
  """`{str(seed): metrics}` of the seeds below `num_seeds` finished (here,
  by an earlier part of the study, or restored from a record)."""
  seed_metrics = {}
  for seed in range(num_seeds):
    path = _results_path(finetune_dir, encoder_id, task_name, seed)
    if tf.io.gfile.exists(path):
      seed_metrics[seed] = files.read_json(path)["metrics"]
  if not seed_metrics:
    return {}
  return outputs.summarize_seeds(seed_metrics, score_key)["seeds"]


def finetune_encoders(encoders, inits, task_names, glue_dir, tokenizer,
                      settings, finetune_dir, progress, log, on_seed):
  """Fine-tunes `settings.num_seeds` seeds of each encoder on each task.

  Args:
    encoders: the study's encoders (`efficiency_study._Encoder`).
    inits: `{encoder id: (its EncoderConfig, its pretraining metrics)}`.
    task_names: GLUE tasks, in the order each seed pass takes them.
    glue_dir, tokenizer: the tasks' files and the study's tokenizer.
    settings: the `StudySettings` (each encoder's fine-tuning
      hyperparameters, `finetuning_of`; seeds; the checkpoint fractions the
      rows name).
    finetune_dir: the study's `finetune/` folder.
    progress: the study's `study_progress.Progress`.
    log: called with one line.
    on_seed: called with the rows of every finished seed after every seed
      trained here.

  Returns:
    The rows of `results.json`'s `runs`, one per encoder, task and seed.
  """
  families = {task_name: glue_family.GlueFamily(task_name, glue_dir)
              for task_name in task_names}

  def encoder_of(task_name):
    """Tokenises the task once, when its first missing seed needs it; the
    next seed passes reuse it."""
    @functools.cache
    def encode():
      started = time.monotonic()
      encoded = families[task_name].encode(tokenizer, settings.finetuning,
                                           False)
      log(f"[study] tokenised {task_name} in "
          f"{time.monotonic() - started:.0f} s (kept for its seeds)")
      return encoded
    return encode

  encode = {task_name: encoder_of(task_name) for task_name in task_names}

  def finished_runs(study_encoder, task_name):
    score_key = families[task_name].score_key
    return _task_runs(
        task_name, score_key, _finished_seeds(
            finetune_dir, study_encoder.id, task_name, settings.num_seeds,
            score_key),
        study_encoder, inits[study_encoder.id][1], settings)

  # Every seed already finished is reported from the first report on.
  task_runs = {(study_encoder.id, task_name):
               finished_runs(study_encoder, task_name)
               for study_encoder in encoders for task_name in task_names}

  def rows():
    return [run for task_rows in task_runs.values() for run in task_rows]

  for seeds in range(1, settings.num_seeds + 1):
    for study_encoder in encoders:
      encoder_config = inits[study_encoder.id][0]
      for task_name in task_names:
        seed_started = time.monotonic()
        new_runs = runs_left(finetune_dir, [study_encoder.id], [task_name],
                             seeds)
        summary = trainer.finetune_task(
            families[task_name], tokenizer, encoder_config,
            study_encoder.kept_dir,
            settings.finetuning_of(study_encoder.variant), seeds,
            os.path.join(finetune_dir, study_encoder.id), with_test=False,
            init_tower=study_encoder.tower, encode=encode[task_name])
        if not new_runs:
          continue
        task_runs[study_encoder.id, task_name] = finished_runs(
            study_encoder, task_name)
        progress.finetuned(
            task_name, new_runs, time.monotonic() - seed_started,
            f"fine-tuned {study_encoder.id} on {task_name}, seed "
            f"{seeds - 1}: {summary['score_key']} median of {seeds} "
            f"{summary['median'][summary['score_key']]:.4f}")
        on_seed(rows())
  return rows()


def _budget_fraction(study_encoder, settings):
  """The kept checkpoint's fraction of the budget as the settings name it
  (the same for every variant, where `step / num_train_steps` is not)."""
  plan = study_encoder.plan
  if plan is None:
    return 0.0
  return settings.checkpoint_fractions[
      plan.checkpoint_steps.index(study_encoder.step)]


def _task_runs(task_name, score_key, seed_metrics, study_encoder,
               pretraining_metrics, settings):
  """One row of `results.json` per finished seed (`{str(seed): metrics}`)
  of a fine-tuned task."""
  plan, step = study_encoder.plan, study_encoder.step
  return [{
      "variant": study_encoder.variant,
      "objective": plan.settings["objective"] if plan else None,
      "step": step,
      "fraction": step / plan.num_train_steps if plan else 0.0,
      "budget_fraction": _budget_fraction(study_encoder, settings),
      "train_flops": study_encoder.train_flops,
      "task": task_name,
      "seed": int(seed),
      "metric": score_key,
      "score": metrics[score_key],
      "metrics": metrics,
      "pretraining": pretraining_metrics,
  } for seed, metrics in sorted(seed_metrics.items(),
                                key=lambda item: int(item[0]))]
