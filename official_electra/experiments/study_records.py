"""Finished fine-tuning runs carried from one machine to the next.

A study of many hours runs in parts, and the next part may be on a machine
without the last one's `output_dir`. Its `results.json` (small, committed
with the report) holds every finished seed's dev metrics; pretraining is
deterministic, so the next machine pretrains the same encoders again, and
`restore_runs` writes the recorded seeds back into `finetune/` as if they had
been fine-tuned there: only the seeds missing from the record are trained.

A recorded run is restored only when it was made on what this study would
make it on, so a run of another encoder never passes for this one's:

- the same encoder shape and fine-tuning hyperparameters (the whole
  record's): otherwise no run applies, and the study stops in one line;
- for random init, the same recipe of its own (`random_init_finetuning` in
  the record; a record without it fine-tuned random init by the study's
  recipe): otherwise its runs are left, with a line, and fine-tuned again;
- for a pretrained encoder, the same variant settings and steps, and the
  same pretraining metrics at that checkpoint, to the
  last bit (the metrics are the mean of its last log records: a checkpoint
  pretrained differently does not give the same numbers). Otherwise that
  encoder's runs are left, with a line naming the difference, and fine-tuned
  again; random init's runs depend on the shape and hyperparameters only.

Pretraining is deterministic (resumes included; across two machines of one
kind, checked), but a code change that reorders a float sum makes another
encoder after thousands of steps: pretrain with the commit the record was
made with (docs/experiments.md).
"""

import json
import os

from official_electra import files
from official_electra.experiments import study_plan
from official_electra.experiments import study_report
from official_electra.finetuning import outputs

RESTORED_KEY = "restored_from"


def _plain(value):
  """`value` as `results.json` holds it (tuples as lists, and so on)."""
  return json.loads(json.dumps(value))


def _first_difference(recorded, current, prefix=""):
  """The first key whose value differs, as `(name, recorded, current)`."""
  if isinstance(recorded, dict) and isinstance(current, dict):
    for key in sorted(set(recorded) | set(current)):
      found = _first_difference(recorded.get(key), current.get(key),
                                f"{prefix}{key}.")
      if found:
        return found
    return None
  if recorded != current:
    return prefix.rstrip("."), recorded, current
  return None


def _difference_in_words(what, recorded, current):
  """None when `recorded` (a record's) and `current` (this study's) agree;
  otherwise their first difference, in words."""
  difference = _first_difference(_plain(recorded), _plain(current))
  if difference is None:
    return None
  name, was, now = difference
  return f"{what} {name} {was!r} in the record, {now!r} here"


def _check_same(record_file, what, recorded, current, fix):
  difference = _difference_in_words(what, recorded, current)
  if difference:
    raise study_plan.StudyConfigError(
        f"{record_file}: its runs were made on other settings: {difference}; "
        f"{fix}")


def recorded_random_init_finetuning(record):
  """The hyperparameters a record fine-tuned random init with: its
  `random_init_finetuning`, or (a record from before random init had a
  recipe of its own) the study's `finetuning`."""
  return record.get("random_init_finetuning", record["finetuning"])


def restore_runs(record_file, finetune_dir, encoders, pretraining_metrics,
                 encoder_config, finetuning, task_names, num_seeds, log,
                 random_init_finetuning=None):
  """Writes the runs `record_file` holds into `finetune_dir`.

  Args:
    record_file: an earlier `results.json` of this study.
    finetune_dir: the study's `finetune/` folder.
    encoders: the study's encoders (`efficiency_study._Encoder`: `id`,
      `variant`, `step`, `plan`), pretrained already.
    pretraining_metrics: `{encoder id: its kept checkpoint's pretraining
      metrics}` for the pretrained encoders.
    encoder_config: the study's discriminator `EncoderConfig` as a dict.
    finetuning: the study's fine-tuning hyperparameters as a dict.
    task_names, num_seeds: the runs the study makes; others are left.
    log: called with one line.
    random_init_finetuning: random init's fine-tuning hyperparameters as a
      dict (default `finetuning`).

  Returns:
    `{task: seeds written}` (seeds already in `finetune_dir` with the same
    metrics are not counted).

  Raises:
    StudyConfigError: an unreadable record, one made with another encoder
      shape or fine-tuning, or one whose metrics differ from a seed already
      here.
  """
  try:
    record = files.read_json(record_file)
    recorded_runs = record["runs"]
    recorded_plans = {plan["name"]: plan for plan in record["variants"]}
    recorded_encoder, recorded_finetuning = (record["encoder"],
                                             record["finetuning"])
    recorded_random_init = recorded_random_init_finetuning(record)
  except (OSError, ValueError, KeyError, TypeError) as error:
    raise study_plan.StudyConfigError(
        f"{record_file}: not a study's results.json ({error}); pass the "
        "results.json an earlier run of this study wrote") from None
  fix = "drop --finished_runs_from to fine-tune every run here"
  _check_same(record_file, "the encoder", recorded_encoder, encoder_config,
              fix)
  _check_same(record_file, "the fine-tuning", recorded_finetuning,
              finetuning, fix)
  by_id = {encoder.id: encoder for encoder in encoders}
  differing, wanted, left = {}, [], 0
  # Everything is checked before anything is written.
  for run in recorded_runs:
    encoder = by_id.get(study_report.encoder_id(run["variant"], run["step"]))
    if (encoder is None or run["task"] not in task_names
        or run["seed"] >= num_seeds):
      left += 1
      continue
    if encoder.id not in differing:
      differing[encoder.id] = (
          _difference_in_words(
              "random init's fine-tuning", recorded_random_init,
              random_init_finetuning or finetuning)
          if encoder.plan is None else _encoder_difference(
              encoder, pretraining_metrics.get(encoder.id), run,
              recorded_plans))
    if differing[encoder.id]:
      continue
    path = os.path.join(finetune_dir, encoder.id, run["task"],
                        f"seed_{run['seed']}", outputs.EVAL_RESULTS_FILE)
    if not _already_there(record_file, path, encoder.id, run):
      wanted.append((path, run))
  written = dict.fromkeys(task_names, 0)
  for path, run in wanted:
    files.write_json(path, {"task": run["task"], "seed": run["seed"],
                            "metrics": run["metrics"],
                            RESTORED_KEY: record_file})
    written[run["task"]] += 1
  log(f"[study] restored {len(wanted)} finished fine-tuning runs from "
      f"{record_file}" + (f" ({left} recorded runs are not this study's and "
                          "were left)" if left else ""))
  for encoder_id, difference in differing.items():
    if difference:
      other = ("recipe" if encoder_id == study_report.RANDOM_INIT
               else "encoder")
      log(f"[study] not restored: the runs of {encoder_id} in {record_file} "
          f"fine-tuned another {other} ({difference}); they are fine-tuned "
          "again here")
  return written


def _encoder_difference(encoder, metrics, run, recorded_plans):
  """None when the recorded run fine-tuned this study's pretrained `encoder`
  (same plan, and `metrics`, its checkpoint's pretraining metrics, the
  same); otherwise the first difference, in words."""
  plan = encoder.plan
  recorded_plan = recorded_plans.get(plan.name)
  if recorded_plan is None:
    return f"the record has no plan of variant {plan.name}"
  # The steps kept do not change the weights: a study keeping fewer
  # fractions of the same run fine-tunes the same encoders.
  plan_difference = _difference_in_words(
      f"variant {plan.name}'s",
      {"settings": recorded_plan["settings"],
       "num_train_steps": recorded_plan["num_train_steps"]},
      {"settings": plan.settings, "num_train_steps": plan.num_train_steps})
  return plan_difference or _difference_in_words(
      "pretraining", run["pretraining"], metrics)


def _already_there(record_file, path, encoder_id, run):
  """Whether the seed's `eval_results.json` is there, with the same metrics.

  Raises:
    StudyConfigError: it is there with other metrics.
  """
  if not files.exists(path):
    return False
  metrics = files.read_json(path)["metrics"]
  if _plain(metrics) != _plain(run["metrics"]):
    raise study_plan.StudyConfigError(
        f"{record_file}: {encoder_id} {run['task']} seed {run['seed']} is "
        f"recorded with {run['metrics']}, but {path} holds {metrics}; "
        "remove one of the two")
  return True
