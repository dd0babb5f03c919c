"""Exports SavedModels for TF Serving.

    python -m official_electra.export --model_dir=runs/small \
      --export_dir=models/electra_small/1

    python -m official_electra.export --finetuned_dir=runs/glue/SST-2 \
      --export_dir=models/sst2/1

    python -m official_electra.export --finetuned_dir=runs/squad/SQuAD-1.1 \
      --export_dir=models/squad/1

`--model_dir` takes a pretraining model_dir written by `official_electra.train`
and exports its discriminator, or with `--tower=generator` its generator
(see official_electra/serving/pretraining_export.py).
`--finetuned_dir` takes a task folder written by `official_electra.finetune`
(its median seed is exported), one `seed_<s>` folder, or the fine-tuning
`--model_dir` itself when it holds one task. A GLUE classifier's
`serving_default` takes raw sentences (official_electra/serving/
classifier_export.py); a SQuAD model's takes a `question` and a `context` and
returns the answer, its character span and score
(official_electra/serving/qa_export.py); both have `serve_token_ids`.
"""


from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import settings_check
from official_electra.serving import finetuned_export
from official_electra.serving import pretraining_export

flags.DEFINE_string("finetuned_dir", None, "Fine-tuned GLUE or SQuAD task or "
                    "seed folder to export (or the fine-tuning --model_dir, "
                    "when it holds one task).")
flags.DEFINE_string("model_dir", None, "Pretraining model_dir whose "
                    "discriminator (or --tower) to export.")
flags.DEFINE_string("tower", None, "With --model_dir: the tower to export, "
                    "discriminator (the default) or generator.")
flags.DEFINE_string("export_dir", None, "SavedModel folder to create.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def main(argv):
  del argv
  try:
    settings_check.check_output_dir(flags.FLAGS.export_dir, "--export_dir")
    if flags.FLAGS.finetuned_dir and flags.FLAGS.model_dir:
      raise finetuned_export.ExportError(
          "pass one of --finetuned_dir (a fine-tuned model) or "
          "--model_dir (a discriminator), not both")
    if flags.FLAGS.tower and not flags.FLAGS.model_dir:
      raise finetuned_export.ExportError(
          "--tower picks a pretrained tower: pass it with --model_dir (a "
          "fine-tuned model exports its own encoder)")
    if flags.FLAGS.finetuned_dir:
      run_dir = finetuned_export.export_finetuned(flags.FLAGS.finetuned_dir,
                                                  flags.FLAGS.export_dir)
      print(f"exported {run_dir} to {flags.FLAGS.export_dir}")
    elif flags.FLAGS.model_dir:
      tower = flags.FLAGS.tower or "discriminator"
      prefix = pretraining_export.export_pretrained(
          flags.FLAGS.model_dir, flags.FLAGS.export_dir, tower)
      print(f"exported the {tower} of {prefix} to {flags.FLAGS.export_dir}")
    else:
      raise finetuned_export.ExportError(
          "nothing to export: pass --finetuned_dir or --model_dir")
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)


if __name__ == "__main__":
  flags.mark_flag_as_required("export_dir")
  app.run(main)
