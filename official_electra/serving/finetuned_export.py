"""The TF Serving SavedModel of any fine-tuned run, whatever its task family.

`export_finetuned` finds the seed folder to export (`resolve_finetuned_run`:
a seed folder, a task folder's selected seed, or the task of a fine-tuning
`--model_dir` that holds one) and hands it to its family's export, read from
the seed folder's description (`finetuned_checkpoint.read_description`):
  classification  `classifier_export.export_classifier` (GLUE, save_classifier)
  span_extraction `qa_export.export_question_answering` (SQuAD 1.1 / 2.0)
"""

import os

from official_electra import files
from official_electra.modeling import errors
from official_electra.modeling import finetuned_checkpoint
from official_electra.serving import classifier_export
from official_electra.serving import qa_export

ExportError = classifier_export.ExportError
_SEED_PREFIX = "seed_"
_EXPORTERS = {
    finetuned_checkpoint.CLASSIFICATION: classifier_export.export_classifier,
    finetuned_checkpoint.SPAN_EXTRACTION: qa_export.export_question_answering,
}


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


def export_finetuned(finetuned_dir: str, export_dir: str) -> str:
  """Writes the serving SavedModel of a fine-tuned run to `export_dir`.

  Args:
    finetuned_dir: a seed, task or model folder of `official_electra.finetune`
      (`resolve_finetuned_run`), or a folder of `save_classifier`.
    export_dir: the SavedModel folder to create (for TF Serving, a numbered
      version folder such as `models/squad/1`); it must not exist yet.

  Returns:
    The seed folder that was exported.

  Raises:
    ExportError: unusable input, an unknown family, or `export_dir` exists.
    op_allowlist.UnservableOpsError: the graph needs ops TF Serving lacks.
  """
  if files.exists(export_dir):
    raise ExportError(f"{export_dir} already exists; pass a new --export_dir "
                      "(TF Serving reads numbered version folders)")
  run_dir = resolve_finetuned_run(finetuned_dir)
  try:
    family = finetuned_checkpoint.read_description(run_dir)["family"]
  except errors.CheckpointError as error:
    raise ExportError(str(error)) from None
  if family not in _EXPORTERS:
    raise ExportError(
        f"{run_dir}: a fine-tuned {family!r} model, which has no export "
        f"(families: {', '.join(sorted(_EXPORTERS))}); upgrade "
        "official_electra or export another run")
  return _EXPORTERS[family](run_dir, export_dir)
