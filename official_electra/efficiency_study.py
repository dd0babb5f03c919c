"""The compute-matched efficiency study: GLUE dev score against pretraining FLOPs.

    python -m official_electra.efficiency_study \
      --gin_file=gin/experiments/cpu_efficiency.gin \
      --corpus='../shared/data/corpus/*.gz' --glue_dir=../shared/data/glue \
      --tasks=CoLA,SST-2,MRPC --output_dir=runs/study [--variants=electra,mlm]

Builds the vocabulary and records from `--corpus` (or reuses them), pretrains
the same discriminator once per variant to the same training FLOPs (the
paper's count unless `efficiency_study.flops_count` says `matmul`), keeping a
checkpoint at each fraction of the budget, fine-tunes each kept checkpoint and
a random initialisation on every task with several seeds, and writes
`results.json`, `results.md` and `results.png` in `--output_dir`. With
`--pretrained_from=<another study's output_dir>` it pretrains nothing and
fine-tunes that study's kept checkpoints instead (fine-tuning protocols
compared on the same encoders). Rerunning
the command continues where it stopped; on another machine,
`--finished_runs_from=<the results.json of an earlier run>` keeps its finished
fine-tuning seeds (the encoders are pretrained again, to the same weights). On SIGTERM the running piece saves a
checkpoint and the program exits with status 75 (rerun to continue).

Variants: `electra`, `mlm`, `electra_15`, `replace_mlm`, `all_tokens_mlm`,
`uniform_generator`, and any that the gin file adds to
`efficiency_study.variants`. See docs/experiments.md.
"""

import os

from absl import app
from absl import flags
import gin

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra import preemption
from official_electra.data import glue
from official_electra.experiments import efficiency_study
from official_electra.experiments import study_plan
from official_electra.finetuning import trainer
from official_electra.modeling import encoder_config
from official_electra.training import flops
from official_electra.training import strategies
from tfrecords_tools import build_vocab

DEFAULT_GIN_FILE = os.path.join("gin", "experiments", "cpu_efficiency.gin")

flags.DEFINE_multi_string("gin_file", None, "Gin files, relative to the "
                          "current folder or the repository; default "
                          f"{DEFAULT_GIN_FILE}.")
flags.DEFINE_multi_string("gin_bindings", None, "Gin bindings, e.g. "
                          "efficiency_study.budget_flops=1e15.")
flags.DEFINE_string("corpus", None, "Comma-separated globs of the pretraining "
                    "corpus (text, .gz, .bz2 or JSON Lines).")
flags.DEFINE_string("vocab_file", None, "Use this WordPiece vocabulary instead "
                    "of learning one from --corpus.")
flags.DEFINE_string("glue_dir", None, "GLUE data folder (one sub-folder per "
                    "task).")
flags.DEFINE_list("tasks", ["CoLA", "SST-2", "MRPC"], "GLUE tasks to score.")
flags.DEFINE_list("variants", ["electra", "mlm"], "Pretraining variants to "
                  "compare (see efficiency_study.variants); --variants= "
                  "(none) fine-tunes random init alone.")
flags.DEFINE_string("output_dir", None, "Study folder (resumes).")
flags.DEFINE_string("pretrained_from", None, "Another study's --output_dir: "
                    "pretrain nothing, fine-tune and probe its kept "
                    "checkpoints (same variants, pretraining settings and "
                    "budget) with this gin file's fine-tuning; --corpus is "
                    "then not needed.")
flags.DEFINE_list("finished_runs_from", [], "Earlier results.json files of "
                  "this study (e.g. committed from another machine): their "
                  "finished fine-tuning seeds are not run again, once the "
                  "encoders here are shown to be the ones they fine-tuned "
                  "(same settings, same pretraining metrics).")
flags.DEFINE_enum("strategy", "auto", strategies.STRATEGIES,
                  "Distribution strategy of pretraining.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")

GinEncoderConfig = gin.external_configurable(encoder_config.EncoderConfig,
                                             "study_encoder")
GinFinetuning = gin.external_configurable(trainer.FinetuneHyperparameters,
                                          "study_finetuning")


@gin.configurable("efficiency_study")
def study_settings(pretraining=gin.REQUIRED, budget_flops=gin.REQUIRED,
                   variants=None, checkpoint_fractions=(0.25, 0.5, 1.0),
                   warmup_proportion=0.1, num_seeds=3, vocab_size=8192,
                   vocab_max_words=build_vocab.DEFAULT_MAX_WORDS,
                   lower_case=True, num_shards=8, linear_probe=True,
                   task_text_copies=0, selection_probe=False,
                   finetune_generators=(), flops_count=flops.PAPER,
                   random_init_own_recipe=True):
  """The gin root of the study (see `efficiency_study.StudySettings`).

  `variants` adds to (or replaces by name) `study_plan.DEFAULT_VARIANTS`.
  `flops_count` is how `budget_flops` is counted: `paper` (the paper's
  compute axis, `training/flops.py`) or `matmul` (what the study records
  committed before it were planned with; their gin files bind it).
  `random_init_own_recipe`: random init fine-tuned without layer-wise decay
  (`StudySettings`); the gin files of the records made before it bind
  False.
  """
  all_variants = dict(study_plan.DEFAULT_VARIANTS)
  all_variants.update(variants or {})
  return efficiency_study.StudySettings(
      encoder=GinEncoderConfig(), pretraining=dict(pretraining),
      variants=all_variants, budget_flops=float(budget_flops),
      checkpoint_fractions=tuple(checkpoint_fractions),
      warmup_proportion=warmup_proportion, finetuning=GinFinetuning(),
      num_seeds=num_seeds, vocab_size=vocab_size,
      vocab_max_words=vocab_max_words, lower_case=lower_case,
      num_shards=num_shards, linear_probe=linear_probe,
      task_text_copies=task_text_copies, selection_probe=selection_probe,
      finetune_generators=tuple(finetune_generators), flops_count=flops_count,
      random_init_own_recipe=random_init_own_recipe)


GinConfigError = command_line.GinConfigError


def _parse_gin(gin_files, gin_bindings):
  command_line.parse_gin(
      gin_files or [DEFAULT_GIN_FILE], gin_bindings, f"see {DEFAULT_GIN_FILE}",
      "fix the name or value (the parameters are those of efficiency_study, "
      "study_encoder and study_finetuning)")


def main(argv):
  del argv
  try:
    _parse_gin(flags.FLAGS.gin_file, flags.FLAGS.gin_bindings)
    needed = (() if flags.FLAGS.pretrained_from else ("corpus",)) + (
        "glue_dir", "output_dir")
    missing = [name for name in needed if not getattr(flags.FLAGS, name)]
    if flags.FLAGS.pretrained_from and (flags.FLAGS.corpus or
                                        flags.FLAGS.vocab_file):
      raise GinConfigError("--pretrained_from uses that study's records and "
                           "vocabulary: drop --corpus and --vocab_file")
    if missing:
      raise GinConfigError(f"no {', '.join(missing)}: pass --"
                           f"{' --'.join(missing)}")
    if not files.isdir(flags.FLAGS.glue_dir):
      raise glue.GlueDataError(f"{flags.FLAGS.glue_dir}: no such folder; pass "
                               "--glue_dir pointing at the GLUE data")
    efficiency_study.run_study(
        flags.FLAGS.output_dir, flags.FLAGS.corpus, flags.FLAGS.glue_dir,
        flags.FLAGS.tasks, flags.FLAGS.variants, study_settings(),
        strategies.create_strategy(flags.FLAGS.strategy),
        vocab_file=flags.FLAGS.vocab_file,
        log=lambda line: print(line, flush=True),
        pretrained_from=flags.FLAGS.pretrained_from,
        finished_runs_from=flags.FLAGS.finished_runs_from)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  except preemption.Preempted as preempted:  # pretraining's or a seed's
    command_line.exit_preempted(preempted)


if __name__ == "__main__":
  app.run(main)
