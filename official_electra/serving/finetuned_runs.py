"""Which fine-tuned run an export reads, and the error every export of a
fine-tuned run raises.

`run_to_export` takes a seed folder (`<model_dir>/<TASK>/seed_<s>`, of any
family), a task folder (`<model_dir>/<TASK>`, whose eval_results.json names
the median seed) or the `--model_dir` of `official_electra.finetune` when it
holds one task, and checks that the export folder is new.
"""

import os

from official_electra import files
from official_electra.modeling import errors
from official_electra.modeling import finetuned_checkpoint

_SEED_PREFIX = "seed_"


class ExportError(errors.UserError):
  """The fine-tuned folder or the export folder is unusable."""


def run_to_export(finetuned_dir: str, export_dir: str) -> str:
  """`resolve_finetuned_run(finetuned_dir)`, once `export_dir` is known to
  be new.

  Raises:
    ExportError: `export_dir` exists, or `resolve_finetuned_run`'s errors.
  """
  if files.exists(export_dir):
    raise ExportError(f"{export_dir} already exists; pass a new --export_dir "
                      "(TF Serving reads numbered version folders)")
  return resolve_finetuned_run(finetuned_dir)


def _selected_seed_folder(task_dir):
  """The seed folder a task folder's eval_results.json selects, or None."""
  summary_path = os.path.join(task_dir, finetuned_checkpoint.EVAL_RESULTS_FILE)
  if not files.isfile(summary_path):
    return None
  try:
    summary = files.read_json(summary_path)
  except (OSError, ValueError):
    return None
  if not isinstance(summary, dict) or "selected_seed" not in summary:
    return None
  run_dir = os.path.join(task_dir, f"{_SEED_PREFIX}{summary['selected_seed']}")
  return run_dir if finetuned_checkpoint.is_seed_folder(run_dir) else None


def _seed_folders(folder):
  """The `seed_<s>` seed folders directly in `folder`, sorted."""
  return sorted(
      os.path.join(folder, name) for name in files.listdir(folder)
      if name.startswith(_SEED_PREFIX) and
      finetuned_checkpoint.is_seed_folder(os.path.join(folder, name)))


def _task_folders(folder):
  """The names of `folder`'s task folders: sub-folders whose
  eval_results.json selects a seed, or that hold seed folders."""
  names = []
  for name in sorted(files.listdir(folder)):
    path = os.path.join(folder, name)
    if files.isdir(path) and (_selected_seed_folder(path) or
                              _seed_folders(path)):
      names.append(name)
  return names


def resolve_finetuned_run(finetuned_dir: str) -> str:
  """The seed folder to export: `finetuned_dir` itself or its selected seed.

  Accepts a seed folder (`<model_dir>/<TASK>/seed_<s>`, of any family), a
  task folder (`<model_dir>/<TASK>`, whose eval_results.json names the
  median seed), or the `--model_dir` of `official_electra.finetune` when it
  holds one task (a sub-folder with such an eval_results.json or with seed
  folders; GLUE's and SQuAD's alike).

  Raises:
    ExportError: none of these, a model_dir of several tasks (listed), or a
      task folder whose seeds were never summarised.
  """
  if finetuned_checkpoint.is_seed_folder(finetuned_dir):
    return finetuned_dir
  if not files.isdir(finetuned_dir):
    raise ExportError(
        f"{finetuned_dir}: no such folder; pass --finetuned_dir=<model_dir>, "
        "<model_dir>/<TASK> or <model_dir>/<TASK>/seed_<s> written by "
        "official_electra.finetune")
  run_dir = _selected_seed_folder(finetuned_dir)
  if run_dir is not None:
    return run_dir
  task_names = _task_folders(finetuned_dir)
  if len(task_names) == 1:
    return resolve_finetuned_run(os.path.join(finetuned_dir, task_names[0]))
  if task_names:
    raise ExportError(
        f"{finetuned_dir} holds {len(task_names)} fine-tuned tasks "
        f"({', '.join(task_names)}): pass one of them, e.g. --finetuned_dir="
        f"{os.path.join(finetuned_dir, task_names[0])}")
  seed_dirs = _seed_folders(finetuned_dir)
  if seed_dirs:
    raise ExportError(
        f"{finetuned_dir} holds seed folders but no "
        f"{finetuned_checkpoint.EVAL_RESULTS_FILE} naming the selected seed "
        "(its fine-tuning has not finished); pass one seed, e.g. "
        f"--finetuned_dir={seed_dirs[0]}")
  raise ExportError(
      f"{finetuned_dir}: not a fine-tuned seed folder (model_config.json with "
      "a finetuned section) nor a task summary naming a seed nor a task "
      "folder; pass --finetuned_dir=<model_dir>, <model_dir>/<TASK> or "
      "<model_dir>/<TASK>/seed_<s> written by official_electra.finetune")
