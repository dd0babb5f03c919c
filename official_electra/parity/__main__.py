"""Pretraining parity with an independent PyTorch implementation.

    python -m official_electra.parity --train_data=data --vocab_file=vocab.txt \
      --output_dir=runs/parity [--gin_file=gin/experiments/parity.gin] \
      [--objectives=electra,mlm] [--seeds=0,1] [--report_dir=DIR]

For each objective and seed, our pretraining and the reference
(`official_electra/parity/reference.py`: the authors' procedure written in
PyTorch on Hugging Face's ELECTRA modules) train from the same initial
weights on the same batches; both are evaluated at every kept step on one
fixed set of corruptions (`runs.py`). Writes `runs/<objective>_<side>_seed
<seed>.json` per run (a rerun skips the finished ones: the study resumes
run by run), then `parity.json`, `parity.md` and `parity.png` (`report.py`)
in --report_dir (default --output_dir). Needs torch and transformers
(`pip install -r requirements-test.txt`). See docs/experiments.md.
"""

import dataclasses
import os

from absl import app
from absl import flags
import gin

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.data import pretraining_files
from official_electra.modeling import encoder_config
from official_electra.parity import report
from official_electra.parity import runs
from official_electra.tokenization import vocabulary as vocabulary_lib

DEFAULT_GIN_FILE = os.path.join("gin", "experiments", "parity.gin")

flags.DEFINE_multi_string("gin_file", None, "Gin files, relative to the "
                          "current folder or the repository; default "
                          f"{DEFAULT_GIN_FILE}.")
flags.DEFINE_multi_string("gin_bindings", None, "Gin bindings, e.g. "
                          "parity_settings.num_steps=500.")
flags.DEFINE_string("train_data", None, "TFRecord glob(s) or dataset folder "
                    "(tfrecords_tools.build_pretraining_dataset's).")
flags.DEFINE_string("vocab_file", None, "Vocabulary of the data.")
flags.DEFINE_string("output_dir", None, "Study folder (resumes run by run).")
flags.DEFINE_string("report_dir", None, "Where the table and figure go "
                    "(default --output_dir).")
flags.DEFINE_list("objectives", ["electra", "mlm"], "Objectives compared.")
flags.DEFINE_list("seeds", ["0", "1"], "Seeds: each gives both sides the "
                  "same initial weights and batches.")
flags.DEFINE_list("sides", list(runs.SIDES), "Sides to run (both by default; "
                  "one side lets two processes share the work).")
flags.DEFINE_bool("report_only", False, "Write the report from the finished "
                  "runs and train nothing.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")

GinEncoderConfig = gin.external_configurable(encoder_config.EncoderConfig,
                                             "parity_encoder")
GinSettings = gin.external_configurable(runs.ParitySettings, "parity_settings")


class ParityError(errors.UserError):
  """A flag the parity study cannot use."""


def _check_flags():
  for name in ("output_dir",) + (() if flags.FLAGS.report_only else
                                 ("train_data", "vocab_file")):
    if not getattr(flags.FLAGS, name):
      raise ParityError(f"--{name} is required")
  unknown = sorted(set(flags.FLAGS.objectives) - set(report.METRICS))
  if unknown:
    raise ParityError(f"--objectives: {', '.join(unknown)} not implemented "
                      f"by the reference; choose from "
                      f"{', '.join(report.METRICS)}")
  unknown = sorted(set(flags.FLAGS.sides) - set(runs.SIDES))
  if unknown:
    raise ParityError(f"--sides: unknown {', '.join(unknown)}; choose from "
                      f"{', '.join(runs.SIDES)}")
  try:
    seeds = [int(seed) for seed in flags.FLAGS.seeds]
  except ValueError:
    raise ParityError(f"--seeds={','.join(flags.FLAGS.seeds)}: give "
                      "integers, e.g. --seeds=0,1") from None
  return seeds


def _require_torch():
  try:
    import torch  # pylint: disable=g-import-not-at-top,unused-import
    import transformers  # pylint: disable=g-import-not-at-top,unused-import
  except ImportError as error:
    raise ParityError(
        f"the reference needs torch and transformers ({error}); install "
        "them with: pip install -r requirements-test.txt") from None


def main(argv):
  del argv
  try:
    seeds = _check_flags()
    output_dir = flags.FLAGS.output_dir
    if not flags.FLAGS.report_only:
      if "reference" in flags.FLAGS.sides:
        _require_torch()
      command_line.parse_gin(
          flags.FLAGS.gin_file or [DEFAULT_GIN_FILE], flags.FLAGS.gin_bindings,
          "pass --gin_file=gin/experiments/parity.gin",
          "see gin/experiments/parity.gin")
      vocabulary = vocabulary_lib.load_vocabulary(flags.FLAGS.vocab_file)
      settings = GinSettings(encoder=dataclasses.replace(
          GinEncoderConfig(), vocab_size=vocabulary.size))
      pretraining_files.check_files(
          pretraining_files.resolve_files(flags.FLAGS.train_data),
          settings.max_seq_length, vocabulary.size, flags.FLAGS.vocab_file)
      files.makedirs(output_dir)
      for objective in flags.FLAGS.objectives:
        for seed in seeds:
          for side in flags.FLAGS.sides:
            runs.run(output_dir, flags.FLAGS.train_data,
                     flags.FLAGS.vocab_file, settings, objective, side, seed,
                     log=lambda line: print(line, flush=True))
    summary = report.write_report(output_dir, flags.FLAGS.report_dir)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  for objective, metrics in summary.items():
    for metric, row in metrics.items():
      if row["kept_steps"]:
        print(f"{objective} {metric}: {row['within_spread']} of "
              f"{row['kept_steps']} kept steps within the seed spread; "
              f"largest gap {row['max_gap']:.4f}")
  print(f"report: {os.path.join(flags.FLAGS.report_dir or output_dir, 'parity.md')}")


if __name__ == "__main__":
  app.run(main)
