"""Converts ELECTRA checkpoints: original TF1 and Hugging Face, in and out.

    # Hugging Face ElectraForPreTraining (+ ElectraForMaskedLM) -> ours
    python -m official_electra.convert --hf_dir=electra-small-discriminator \
      [--hf_generator_dir=electra-small-generator] --output_dir=runs/imported \
      [--vocab_file=vocab.txt]
    # the authors' TF1 checkpoint -> ours
    python -m official_electra.convert \
      --tf1_checkpoint=electra_small/electra_small \
      --model_size=small_plus_plus \
      --output_dir=runs/imported [--vocab_file=electra_small/vocab.txt]
    # ours -> Hugging Face directories / TF1 names
    python -m official_electra.convert --checkpoint=runs/small \
      [--hf_output_dir=hf/discriminator] \
      [--hf_generator_output_dir=hf/generator] \
      [--tf1_output_prefix=tf1/model.ckpt]
    # a fine-tuned SQuAD model (independent head, no answerability
    # classifier) -> Hugging Face ElectraForQuestionAnswering, and back
    python -m official_electra.convert --finetuned_dir=runs/squad/SQuAD-1.1 \
      --hf_output_dir=hf/qa
    python -m official_electra.convert --hf_qa_dir=hf/qa \
      --output_dir=runs/imported_qa [--vocab_file=vocab.txt] \
      [--task=SQuAD-1.1|SQuAD-2.0]

An import writes `<output_dir>/ckpt-0` in the project's checkpoint layout, with
`model_config.json` beside it (the towers imported, their heads, the
vocabulary's ids and case) and `vocab.txt` when `--vocab_file` is given (a
Hugging Face import takes `vocab.txt` and `do_lower_case` from the folder's
tokenizer files when the flags are not given);
`official_electra.train` and `official_electra.finetune` take it as
`--init_checkpoint`, and `official_electra.export` exports it. The TF1
architecture comes from `--model_size` or the two `--*_config_json` files (an
`EncoderConfig` as JSON). See docs/checkpoints.md.

A question-answering import writes a SQuAD seed folder, as
`official_electra.finetune` writes one per seed: `official_electra.export
--finetuned_dir` exports it and `official_electra.finetune --init_checkpoint`
starts from its encoder. Only the independent head without the answerability
classifier (`squad_task.joint_prediction = False`,
`squad_task.answerable_classifier = False`) has a Hugging Face counterpart.
"""

import os

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra import settings_check
from official_electra.conversion import checkpoint_dir
from official_electra.conversion import converters
from official_electra.conversion import electra_parts
from official_electra.conversion import tf1_files
from official_electra.finetuning import squad_family


def define_flags():
  """Defines the flags; only when run as a program, so that importing this
  module beside another entry point (in tests) defines no flag twice."""
  flags.DEFINE_string("hf_dir", None, "Hugging Face ElectraForPreTraining "
                      "directory (the discriminator) to import.")
  flags.DEFINE_string("hf_generator_dir", None, "Hugging Face "
                      "ElectraForMaskedLM directory (the generator) to import.")
  flags.DEFINE_string("hf_qa_dir", None, "Hugging Face "
                      "ElectraForQuestionAnswering directory to import as a "
                      "SQuAD seed folder.")
  flags.DEFINE_enum("task", None, list(squad_family.TASK_NAMES), "SQuAD "
                    "version recorded for --hf_qa_dir (default SQuAD-1.1).")
  flags.DEFINE_string("tf1_checkpoint", None, "Original TF1 ELECTRA checkpoint "
                      "prefix to import, e.g. electra_small/electra_small.")
  flags.DEFINE_enum("model_size", None, list(converters.MODEL_SIZES),
                    "Architecture of --tf1_checkpoint (the released "
                    "checkpoints are small_plus_plus, base and large).")
  flags.DEFINE_string("discriminator_config_json", None, "EncoderConfig "
                      "JSON of the discriminator of --tf1_checkpoint "
                      "(overrides --model_size).")
  flags.DEFINE_string("generator_config_json", None, "EncoderConfig JSON of "
                      "the generator of --tf1_checkpoint (overrides "
                      "--model_size).")
  flags.DEFINE_string("output_dir", None, "New directory for the imported "
                      "checkpoint (for --hf_qa_dir, the seed folder).")
  flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary of the model: "
                      "copied beside the import; its [MASK] etc. set the "
                      "pretrainer's masking ids (BERT's ids when absent). "
                      "Default for --hf_dir and --hf_qa_dir: the folder's "
                      "vocab.txt (--hf_qa_dir needs one).")
  flags.DEFINE_bool("lower_case", None, "Whether the vocabulary is uncased "
                    "(recorded in model_config.json for the export). "
                    "Default: do_lower_case of the Hugging Face folder's "
                    "tokenizer_config.json, else true.")
  flags.DEFINE_string("checkpoint", None, "Our checkpoint (model_dir or "
                      "prefix) to export.")
  flags.DEFINE_string("finetuned_dir", None, "Fine-tuned SQuAD seed folder, "
                      "task folder or model_dir to export to --hf_output_dir "
                      "as ElectraForQuestionAnswering.")
  flags.DEFINE_string("hf_output_dir", None, "New directory for the exported "
                      "discriminator (ElectraForPreTraining), or for "
                      "--finetuned_dir the ElectraForQuestionAnswering.")
  flags.DEFINE_string("hf_generator_output_dir", None, "New directory for the "
                      "exported generator (ElectraForMaskedLM).")
  flags.DEFINE_string("tf1_output_prefix", None, "Prefix of the exported TF1 "
                      "checkpoint, e.g. tf1/model.ckpt.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def _tf1_configs(model_size, discriminator_config_json, generator_config_json):
  discriminator_config = generator_config = None
  if model_size:
    discriminator_config, generator_config = converters.model_size_configs(
        model_size)
  if discriminator_config_json:
    discriminator_config = checkpoint_dir.read_config_file(
        discriminator_config_json)
  if generator_config_json:
    generator_config = checkpoint_dir.read_config_file(generator_config_json)
  if discriminator_config is None:
    raise electra_parts.ConversionError(
        "--tf1_checkpoint needs its architecture: pass --model_size or "
        "--discriminator_config_json (and --generator_config_json)")
  return discriminator_config, generator_config


def _flag(flag_values, name):
  """A flag's value; None when `flag_values` (a namespace built by a caller
  of `run`) predates the flag."""
  return getattr(flag_values, name, None)


def _refuse_flags(flag_values, names, reason):
  """Raises ConversionError `<reason>; drop --<name>, ...` when any flag of
  `names` is set."""
  given = [f"--{name}" for name in names if getattr(flag_values, name)]
  if given:
    raise electra_parts.ConversionError(f"{reason}; drop {', '.join(given)}")


def _output_folder(flag_values, name, missing):
  """The output folder flag `name` once checked as one; ConversionError
  `missing` when it is not set."""
  folder = getattr(flag_values, name)
  if not folder:
    raise electra_parts.ConversionError(missing)
  settings_check.check_output_dir(folder, f"--{name}")
  return folder


def run(flag_values):
  """Runs the conversion the flags ask for; returns a summary line."""
  imports_hf = bool(flag_values.hf_dir or flag_values.hf_generator_dir)
  sources = [name for name, given in (
      ("--hf_dir/--hf_generator_dir", imports_hf),
      ("--hf_qa_dir", _flag(flag_values, "hf_qa_dir")),
      ("--tf1_checkpoint", flag_values.tf1_checkpoint),
      ("--checkpoint", flag_values.checkpoint),
      ("--finetuned_dir", _flag(flag_values, "finetuned_dir"))) if given]
  if len(sources) != 1:
    raise electra_parts.ConversionError(
        "pass exactly one source: --hf_dir/--hf_generator_dir, --hf_qa_dir, "
        "--tf1_checkpoint, --checkpoint or --finetuned_dir "
        f"(got {', '.join(sources) or 'none'})")
  if _flag(flag_values, "task") and not _flag(flag_values, "hf_qa_dir"):
    raise electra_parts.ConversionError(
        "--task names the SQuAD version of an --hf_qa_dir import; drop it "
        f"for {sources[0]}")
  if _flag(flag_values, "hf_qa_dir"):
    return _run_question_answering_import(flag_values)
  if _flag(flag_values, "finetuned_dir"):
    return _run_question_answering_export(flag_values)
  if flag_values.checkpoint:
    return _run_export(flag_values)
  return _run_import(flag_values, imports_hf)


def _run_question_answering_import(flag_values):
  _refuse_flags(
      flag_values, ("model_size", "discriminator_config_json",
                    "generator_config_json", "hf_output_dir",
                    "hf_generator_output_dir", "tf1_output_prefix"),
      "--hf_qa_dir imports to --output_dir only (its config.json gives the "
      "architecture)")
  output_dir = _output_folder(
      flag_values, "output_dir",
      "an import needs --output_dir (for --hf_qa_dir, the new seed folder)")
  task_name = _flag(flag_values, "task") or "SQuAD-1.1"
  converters.import_hf_question_answering(
      flag_values.hf_qa_dir, output_dir, flag_values.vocab_file, task_name,
      flag_values.lower_case)
  return (f"wrote {output_dir} ({task_name} seed folder, independent span "
          "head; official_electra.export --finetuned_dir and "
          "official_electra.finetune --init_checkpoint read it)")


def _run_question_answering_export(flag_values):
  _refuse_flags(
      flag_values,
      ("hf_generator_output_dir", "tf1_output_prefix", "output_dir"),
      "--finetuned_dir exports to --hf_output_dir only (an "
      "ElectraForQuestionAnswering folder)")
  hf_output_dir = _output_folder(
      flag_values, "hf_output_dir",
      "an export of --finetuned_dir needs --hf_output_dir (the new "
      "ElectraForQuestionAnswering folder)")
  run_dir = converters.export_hf_question_answering(
      flag_values.finetuned_dir, hf_output_dir)
  return f"wrote {hf_output_dir} (ElectraForQuestionAnswering of {run_dir})"


def _run_import(flag_values, imports_hf):
  _output_folder(flag_values, "output_dir", "an import needs --output_dir")
  if imports_hf:
    prefix = converters.import_hf(
        flag_values.hf_dir, flag_values.hf_generator_dir,
        flag_values.output_dir, flag_values.vocab_file, flag_values.lower_case)
  else:
    prefix = converters.import_tf1(
        flag_values.tf1_checkpoint,
        *_tf1_configs(flag_values.model_size,
                      flag_values.discriminator_config_json,
                      flag_values.generator_config_json),
        flag_values.output_dir, flag_values.vocab_file,
        True if flag_values.lower_case is None else flag_values.lower_case)
  configs = checkpoint_dir.read_configs(flag_values.output_dir)
  towers = [tower for tower, config in zip(("discriminator", "generator"),
                                           configs) if config is not None]
  described_by = sorted(name for name in files.listdir(flag_values.output_dir)
                        if name.endswith(".json"))
  return (f"wrote {prefix} ({' and '.join(towers)}; architecture in "
          f"{', '.join(described_by)})")


def _run_export(flag_values):
  outputs = [flag_values.hf_output_dir, flag_values.hf_generator_output_dir,
             flag_values.tf1_output_prefix]
  if not any(outputs):
    raise electra_parts.ConversionError(
        "an export needs --hf_output_dir, --hf_generator_output_dir or "
        "--tf1_output_prefix")
  # Every output is checked before anything is written.
  for flag, output_dir in zip(("--hf_output_dir", "--hf_generator_output_dir"),
                              outputs[:2]):
    if output_dir:
      settings_check.check_output_dir(output_dir, flag)
      electra_parts.check_new_output(output_dir)
  if flag_values.tf1_output_prefix:
    settings_check.check_output_dir(
        os.path.dirname(flag_values.tf1_output_prefix) or ".",
        "the folder of --tf1_output_prefix")
    tf1_files.check_new_prefix(flag_values.tf1_output_prefix)
  if flag_values.hf_output_dir or flag_values.hf_generator_output_dir:
    converters.export_hf(flag_values.checkpoint, flag_values.hf_output_dir,
                         flag_values.hf_generator_output_dir)
  if flag_values.tf1_output_prefix:
    converters.export_tf1(flag_values.checkpoint, flag_values.tf1_output_prefix)
  return f"wrote {', '.join(path for path in outputs if path)}"


def main(argv):
  del argv
  try:
    print(run(flags.FLAGS))
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)


if __name__ == "__main__":
  define_flags()
  app.run(main)
