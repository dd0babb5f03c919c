"""Pretrains ELECTRA: gin configs, tf.distribute, resumable checkpoints.

    python -m official_electra.train --gin_file=gin/small.gin \
      --train_data='data/pretrain_data.tfrecord-*' --vocab_file=vocab.txt \
      --model_dir=runs/small [--strategy=auto] [--mixed_precision=mixed_bfloat16]

Rerunning the same command resumes from the latest checkpoint in --model_dir
(same data stream, same LR schedule position). On SIGTERM (preemption) it
saves a checkpoint, prints `preempted: ...` and exits with status 75, as every
entry point does (official_electra/command_line.py lists the exit codes). `run_pretraining` is the only
gin-configurable function (`encoder` configures the discriminator's
`EncoderConfig`); the resolved config is written to `model_dir/config.gin`.
See docs/training.md.
"""

import os

from absl import app
from absl import flags
import gin
import tf_keras

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra import preemption
from official_electra.modeling import encoder_config
from official_electra.training import pretraining_run
from official_electra.training import strategies

CONFIG_FILE = "config.gin"
PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")

flags.DEFINE_multi_string("gin_file", None, "Gin files, relative to the current "
                          "folder or the repository, e.g. gin/small.gin.")
flags.DEFINE_multi_string("gin_bindings", None, "Gin bindings, e.g. "
                          "run_pretraining.num_train_steps=1000.")
flags.DEFINE_string("model_dir", None, "Output folder (resumes from its latest "
                    "checkpoint).")
flags.DEFINE_string("train_data", None, "TFRecord glob(s) or dataset folder "
                    "(or run_pretraining.train_data in gin).")
flags.DEFINE_string("vocab_file", None, "Vocabulary of the data (or "
                    "run_pretraining.vocab_file in gin).")
flags.DEFINE_string("init_checkpoint", None, "Start from these weights (no "
                    "optimizer state): a model_dir or checkpoint prefix.")
flags.DEFINE_enum("strategy", "auto", strategies.STRATEGIES,
                  "Distribution strategy.")
flags.DEFINE_string("tpu", None, "TPU name or address ('local' on a TPU VM).")
flags.DEFINE_enum("mixed_precision", "float32", PRECISIONS, "Keras dtype policy.")
flags.DEFINE_bool("jit_compile", False, "XLA-compile the train step.")
flags.DEFINE_bool("progress_bar", True, "Show Keras' progress bar.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")

GinEncoderConfig = gin.external_configurable(encoder_config.EncoderConfig,
                                             "encoder")
GinRunPretraining = gin.external_configurable(pretraining_run.run_pretraining,
                                              "run_pretraining")


GinConfigError = command_line.GinConfigError


def parse_gin(gin_files, gin_bindings):
  """Parses gin files (found in the current folder or the repo) and bindings.

  Raises:
    GinConfigError: one line naming the file and the fix.
  """
  command_line.parse_gin(
      gin_files or [], gin_bindings,
      "see gin/ for tiny.gin, small.gin, base.gin, large.gin and "
      "small_plus_plus.gin",
      "fix the name or value (the parameters are those of run_pretraining and "
      "encoder, see official_electra/training/pretraining_run.py)")


def _write_config(model_dir):
  files.write_text(os.path.join(model_dir, CONFIG_FILE),
                   gin.operative_config_str())


def main(argv):
  del argv
  try:
    parse_gin(flags.FLAGS.gin_file, flags.FLAGS.gin_bindings)
    if flags.FLAGS.mixed_precision != "float32":
      tf_keras.mixed_precision.set_global_policy(flags.FLAGS.mixed_precision)
    strategy = strategies.create_strategy(flags.FLAGS.strategy, flags.FLAGS.tpu)
    overrides = {name: getattr(flags.FLAGS, name)
                 for name in ("model_dir", "train_data", "vocab_file",
                              "init_checkpoint")
                 if getattr(flags.FLAGS, name) is not None}
    missing = [name for name in ("model_dir", "train_data", "vocab_file")
               if name not in overrides and not _gin_has(name)]
    if missing:
      raise GinConfigError(
          f"no {', '.join(missing)}: pass --{' --'.join(missing)} (or bind "
          "run_pretraining.<name> in a gin file)")
    result = GinRunPretraining(
        strategy=strategy, encoder=GinEncoderConfig(),
        mixed_precision=flags.FLAGS.mixed_precision,
        jit_compile=flags.FLAGS.jit_compile,
        progress_bar=flags.FLAGS.progress_bar, write_config=_write_config,
        **overrides)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  except preemption.Preempted as preempted:
    command_line.exit_preempted(preempted)
  print(f"stopped at step {result['step']}; checkpoint {result['checkpoint']}")


def _gin_has(parameter):
  try:
    gin.query_parameter(f"run_pretraining.{parameter}")
    return True
  except ValueError:
    return False


if __name__ == "__main__":
  app.run(main)
