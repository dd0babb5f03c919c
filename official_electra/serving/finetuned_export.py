"""The TF Serving SavedModel of any fine-tuned run, whatever its task family.

`export_finetuned` finds the seed folder to export
(`finetuned_runs.resolve_finetuned_run`: a seed folder, a task folder's
selected seed, or the task of a fine-tuning `--model_dir` that holds one)
and hands it to its family's export, read from
the seed folder's description (`finetuned_checkpoint.read_description`):
  classification  `classifier_export.export_classifier` (GLUE, save_classifier)
  span_extraction `qa_export.export_question_answering` (SQuAD 1.1 / 2.0)
"""

from official_electra.modeling import errors
from official_electra.modeling import finetuned_checkpoint
from official_electra.serving import classifier_export
from official_electra.serving import finetuned_runs
from official_electra.serving import qa_export

ExportError = finetuned_runs.ExportError
_EXPORTERS = {
    finetuned_checkpoint.CLASSIFICATION: classifier_export.export_classifier,
    finetuned_checkpoint.SPAN_EXTRACTION: qa_export.export_question_answering,
}


def export_finetuned(finetuned_dir: str, export_dir: str) -> str:
  """Writes the serving SavedModel of a fine-tuned run to `export_dir`.

  Args:
    finetuned_dir: a seed, task or model folder of `official_electra.finetune`
      (`finetuned_runs.resolve_finetuned_run`), or a folder of
      `save_classifier`.
    export_dir: the SavedModel folder to create (for TF Serving, a numbered
      version folder such as `models/squad/1`); it must not exist yet.

  Returns:
    The seed folder that was exported.

  Raises:
    ExportError: unusable input, an unknown family, or `export_dir` exists.
    op_allowlist.UnservableOpsError: the graph needs ops TF Serving lacks.
  """
  run_dir = finetuned_runs.resolve_finetuned_run(finetuned_dir)
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
