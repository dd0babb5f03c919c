"""Fine-tunes a pretrained ELECTRA discriminator on GLUE or SQuAD and scores
its dev sets.

    python -m official_electra.finetune --task=RTE --glue_dir=glue_data \
      --init_checkpoint=runs/small --vocab_file=vocab.txt --model_dir=runs/glue \
      [--gin_file=gin/glue/small.gin] [--gin_bindings=glue_hyperparameters.learning_rate=1e-4] \
      [--num_seeds=10]
    python -m official_electra.finetune --task=SQuAD-1.1 \
      --train_file=train-v1.1.json --predict_file=dev-v1.1.json \
      --init_checkpoint=runs/small --model_dir=runs/squad \
      [--gin_file=gin/squad/small.gin] [--train_articles=0-39 --predict_articles=40-47]

On SIGTERM (preemption) the running seed stops at the next training step,
writes a checkpoint, prints `preempted: ...` and exits with status 75
(EX_TEMPFAIL); the same command resumes it. Finished seeds are not rerun.

`glue_hyperparameters.recipe` is `original_code` (the default: the authors' code
as it ran, behind the medians the gin files quote) or `paper` (Table 7); see
official_electra/finetuning/recipes.py.

`--task` is one GLUE task, a comma-separated list, or `all`; or `SQuAD-1.1` or
`SQuAD-2.0` (alone; settings `squad_hyperparameters.*` and `squad_task.*`,
default gin file gin/squad/small.gin; the windows are cached under
`<model_dir>/<task>/features/`). `--init_checkpoint` takes a pretraining
model_dir or a checkpoint prefix (omit it only to measure a randomly
initialised encoder); `--init_tower=generator` fine-tunes an ELECTRA run's
generator instead of its discriminator (at the generator's own size).
Writes `<model_dir>/eval_results.json` (every metric of every task, per seed
and the median), `<model_dir>/submission/` (GLUE submission files from each
task's median seed), `<model_dir>/<TASK>/seed_<s>/` (TensorBoard logs,
checkpoint, predictions) and `<model_dir>/operative_config.gin`;
for SQuAD `<model_dir>/submission/` holds the median seed's `predictions.json`
(and `null_odds.json`), the official scripts' input.
See official_electra/finetuning/README.md.
"""

import os

from absl import app
from absl import flags
from absl import logging
import gin
import tensorflow as tf

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra import preemption
from official_electra import settings_check
from official_electra.data import glue
from official_electra.data import squad
from official_electra.finetuning import glue_family
from official_electra.finetuning import outputs
from official_electra.finetuning import recipes
from official_electra.finetuning import squad_family
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config
from official_electra.modeling import model_config
from official_electra.modeling import pretrained
from official_electra.optimization import layerwise_decay
from official_electra.tokenization import vocabulary
from official_electra.tokenization import wordpiece_tokenizer

DEFAULT_GIN_FILE = os.path.join("gin", "glue", "small.gin")
DEFAULT_SQUAD_GIN_FILE = os.path.join("gin", "squad", "small.gin")

flags.DEFINE_string("task", None, "A GLUE task (CoLA, SST-2, MRPC, STS-B, QQP, "
                    "MNLI, QNLI, RTE, WNLI), a comma-separated list, or all; "
                    "or SQuAD-1.1 or SQuAD-2.0.")
flags.DEFINE_string("glue_dir", None, "Folder the GLUE download script wrote "
                    "(one sub-folder per task); GLUE tasks only.")
flags.DEFINE_string("train_file", None, "SQuAD: the training JSON.")
flags.DEFINE_string("predict_file", None, "SQuAD: the JSON scored after each "
                    "epoch (the dev set).")
flags.DEFINE_string("train_articles", None, "SQuAD: indices of the training "
                    "file's articles to train on, e.g. 0-39 (default all).")
flags.DEFINE_string("predict_articles", None, "SQuAD: indices of the predict "
                    "file's articles to score, e.g. 40-47 (default all).")
flags.DEFINE_string("init_checkpoint", None, "Pretraining model_dir or "
                    "checkpoint prefix to start from.")
flags.DEFINE_enum("init_tower", "discriminator", pretrained.TOWERS,
                  "The tower of --init_checkpoint to fine-tune: the "
                  "discriminator, or an ELECTRA run's generator (at its own "
                  "size).")
flags.DEFINE_string("model_dir", None, "Output folder.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary of the pretrained "
                    "model; default: vocab.txt in --init_checkpoint's folder.")
flags.DEFINE_bool("lower_case", True, "Lower-case and strip accents (uncased "
                  "vocabularies such as ELECTRA's).")
flags.DEFINE_multi_string("gin_file", None, "Gin files, relative to the "
                          "current folder or the repository; default "
                          f"{DEFAULT_GIN_FILE} (SQuAD: {DEFAULT_SQUAD_GIN_FILE}).")
flags.DEFINE_multi_string("gin_bindings", None, "Gin bindings, e.g. "
                          "glue_hyperparameters.learning_rate=1e-4 (the name "
                          "every program uses).")
flags.DEFINE_integer("num_seeds", 1, "Fine-tuning runs per task; the median is "
                     "reported (the paper uses 10).", lower_bound=1)
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


GinEncoderConfig = gin.external_configurable(encoder_config.EncoderConfig,
                                             "glue_encoder")
GinHyperparameters = gin.external_configurable(trainer.FinetuneHyperparameters,
                                               "glue_hyperparameters")
GinSquadHyperparameters = gin.external_configurable(
    trainer.FinetuneHyperparameters, "squad_hyperparameters")
GinSquadSettings = gin.external_configurable(squad_family.SquadSettings,
                                             "squad_task")

GinConfigError = command_line.GinConfigError


class ModelDirError(errors.UserError):
  """`--model_dir` cannot be created or written."""


def _resolve_vocab_file(vocab_file, init_checkpoint):
  if vocab_file:
    return vocab_file
  if init_checkpoint:
    candidate = os.path.join(model_config.folder_of(init_checkpoint),
                             "vocab.txt")
    if files.isfile(candidate):
      return candidate
  raise vocabulary.VocabularyError(
      "no vocabulary: pass --vocab_file=vocab.txt (the pretrained model's "
      "WordPiece vocabulary, e.g. BERT's uncased vocab.txt)")


def _parse_gin(gin_files, gin_bindings, task_flag=None):
  squad = task_flag in squad_family.TASK_NAMES
  command_line.parse_gin(
      gin_files or [DEFAULT_SQUAD_GIN_FILE if squad else DEFAULT_GIN_FILE],
      gin_bindings,
      "see gin/glue/ and gin/squad/ for small.gin, base.gin and large.gin",
      "fix the binding (see gin/glue/recipe.gin and gin/squad/recipe.gin for "
      "the names)")


def resolve_encoder_config(init_checkpoint, tower="discriminator"):
  """The encoder to fine-tune: `tower` as recorded beside `init_checkpoint`.

  A checkpoint folder that records its model (`model_config.json`, written
  by pretraining, conversion and fine-tuning) decides it; `glue_encoder.*`
  bindings are then only checked against it.
  Without a recorded architecture (no checkpoint: random initialisation, or a
  bare checkpoint prefix), the `glue_encoder.*` bindings decide (defaults:
  ELECTRA-Small).

  Raises:
    GinConfigError: a `glue_encoder` binding contradicts the checkpoint.
    checkpoints.CheckpointError: the recorded file is unreadable, or
      `tower` is the generator of a folder that records none.
  """
  recorded = (checkpoints.recorded_encoder_config(init_checkpoint, tower)
              if init_checkpoint else None)
  if tower != "discriminator" and recorded is None:
    raise checkpoints.CheckpointError(
        f"--init_tower={tower} needs an --init_checkpoint that records a "
        f"{tower}; {init_checkpoint or 'none was given'}"
        f"{' records none' if init_checkpoint else ''} (pass an ELECTRA "
        "pretraining model_dir, or --init_tower=discriminator)")
  if recorded is None:
    return GinEncoderConfig()
  differences = checkpoints.encoder_config_differences(
      recorded, gin.get_bindings("glue_encoder"))
  if differences:
    raise GinConfigError(
        f"{init_checkpoint}: glue_encoder bindings contradict the architecture "
        f"recorded with the checkpoint ({'; '.join(differences)}); remove "
        "them (fine-tuning takes the architecture from the checkpoint)")
  return recorded


_CHECK = settings_check
# None for a (recipe) field: the recipe's value.
_HYPERPARAMETER_RULES = {
    "recipe": _CHECK.one_of(*recipes.RECIPES),
    "learning_rate": _CHECK.optional(_CHECK.POSITIVE_NUMBER),
    "layerwise_decay_rate": _CHECK.POSITIVE_NUMBER,
    "layerwise_decay_rule": _CHECK.optional(_CHECK.one_of(
        *layerwise_decay.LAYERWISE_DECAY_RULES)),
    "loss_reduction": _CHECK.optional(_CHECK.one_of(*recipes.LOSS_REDUCTIONS)),
    "scale_regression_targets": _CHECK.optional(_CHECK.BOOLEAN),
    "batch_size": _CHECK.POSITIVE_INTEGER,
    "eval_batch_size": _CHECK.POSITIVE_INTEGER,
    "num_train_epochs": _CHECK.optional(_CHECK.POSITIVE_INTEGER),
    "warmup_proportion": _CHECK.RATE,
    "weight_decay_rate": _CHECK.RATE,
    "dropout_rate": _CHECK.RATE,
    "gradient_clip_norm": _CHECK.optional(_CHECK.POSITIVE_NUMBER),
    "max_seq_length": _CHECK.POSITIVE_INTEGER,
    "max_train_examples": _CHECK.optional(_CHECK.POSITIVE_INTEGER),
    "save_checkpoints_steps": _CHECK.POSITIVE_INTEGER,
    "keep_checkpoint_max": _CHECK.POSITIVE_INTEGER,
}

_SQUAD_SETTING_RULES = {
    "doc_stride": _CHECK.POSITIVE_INTEGER,
    "max_query_length": _CHECK.POSITIVE_INTEGER,
    "n_best_size": _CHECK.POSITIVE_INTEGER,
    "max_answer_length": _CHECK.POSITIVE_INTEGER,
    "joint_prediction": _CHECK.BOOLEAN,
    "beam_size": _CHECK.POSITIVE_INTEGER,
    "answerable_classifier": _CHECK.BOOLEAN,
    "answerable_uses_start_logits": _CHECK.BOOLEAN,
    "answerable_weight": _CHECK.NON_NEGATIVE_NUMBER,
    "head_hidden_size": _CHECK.POSITIVE_INTEGER,
    "null_threshold": _CHECK.number(),
}

# Each gin name the program reads: what it configures and its bindings' rules.
_CONFIGURABLES = {
    "glue_hyperparameters": (GinHyperparameters, _HYPERPARAMETER_RULES),
    "squad_hyperparameters": (GinSquadHyperparameters, _HYPERPARAMETER_RULES),
    "squad_task": (GinSquadSettings, _SQUAD_SETTING_RULES),
}


def _hyperparameters(name="glue_hyperparameters"):
  """The settings gin configures under `name`, their bindings checked first:
  `glue_hyperparameters` or `squad_hyperparameters` (the recipe's values
  filled in), or `squad_task` (SQuAD's `SquadSettings`).

  Raises:
    SettingError (a GinConfigError): naming the first binding of the wrong
      type or range (checked before the recipe is looked up).
  """
  configurable, rules = _CONFIGURABLES[name]
  settings_check.check(gin.get_bindings(name), rules, f"{name}.",
                       "fix the binding")
  return configurable()


def _families(task_flag, glue_dir, squad_files, model_dir):
  """The task families `--task` names (SQuAD's alone, or GLUE tasks)."""
  if task_flag in squad_family.TASK_NAMES:
    train_file, predict_file, train_articles, predict_articles = (
        squad_files or (None,) * 4)
    for flag, path in (("--train_file", train_file),
                       ("--predict_file", predict_file)):
      if not path:
        raise squad.SquadDataError(f"--task={task_flag} needs {flag}: pass "
                                   "the SQuAD JSON file")
      if not files.isfile(path):
        raise squad.SquadDataError(f"{path}: no such file; pass {flag} "
                                   "pointing at a SQuAD JSON file")
    family = squad_family.SquadFamily(
        task_flag, train_file, predict_file, _hyperparameters("squad_task"),
        os.path.join(model_dir, task_flag, "features"),
        train_articles=(None if train_articles is None else
                        squad.parse_article_indices(train_articles)),
        predict_articles=(None if predict_articles is None else
                          squad.parse_article_indices(predict_articles)))
    family.check_files()  # Before --model_dir is created.
    return [family]
  task_names = tasks.resolve_task_names(task_flag)
  if not glue_dir:
    raise glue.GlueDataError(f"--task={task_flag} needs --glue_dir: pass the "
                             "GLUE download script's output folder")
  if not files.isdir(glue_dir):
    raise glue.GlueDataError(f"{glue_dir}: no such folder; pass --glue_dir "
                             "pointing at the GLUE download script's output")
  return [glue_family.GlueFamily(name, glue_dir) for name in task_names]


def run(task_flag, glue_dir, init_checkpoint, model_dir, vocab_file, lower_case,
        num_seeds, squad_files=None, init_tower="discriminator"):
  """Fine-tunes every requested task; returns `{task: summary}`.

  `init_tower`: the tower of `init_checkpoint` to fine-tune.

  `squad_files`: for a SQuAD task, `(train_file, predict_file,
  train_articles, predict_articles)` (the articles as text such as `0-39`,
  or None for all).
  """
  is_squad = task_flag in squad_family.TASK_NAMES
  families = _families(task_flag, glue_dir, squad_files, model_dir)
  config = resolve_encoder_config(init_checkpoint, init_tower)
  settings_check.check_encoder(config, "glue_encoder.")
  hyperparameters = _hyperparameters("squad_hyperparameters" if is_squad
                                     else "glue_hyperparameters")
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      _resolve_vocab_file(vocab_file, init_checkpoint), lower_case=lower_case)
  if tokenizer.vocab_size != config.vocab_size:
    raise vocabulary.VocabularyError(
        f"{tokenizer.vocab_file} has {tokenizer.vocab_size} tokens but the "
        f"encoder's vocab_size is {config.vocab_size}: pass the pretrained "
        "model's vocabulary (vocab.txt beside the checkpoint)")
  try:
    files.makedirs(model_dir)
    reason = None if files.isdir(model_dir) else "it is a file"
  except tf.errors.OpError as error:
    reason = files.os_error(error, model_dir).strerror
  if reason is not None:
    raise ModelDirError(f"{model_dir}: cannot create the output folder "
                        f"({reason}); pass a writable --model_dir that is "
                        "not a file")
  files.write_text(os.path.join(model_dir, "operative_config.gin"),
                                gin.config_str())
  results_path = os.path.join(model_dir, outputs.EVAL_RESULTS_FILE)
  all_results = (files.read_json(results_path)
                 if files.isfile(results_path) else {})
  for family in families:
    task_name = family.name
    summary = trainer.finetune_task(family, tokenizer, config,
                                    init_checkpoint, hyperparameters,
                                    num_seeds, model_dir,
                                    init_tower=init_tower)
    all_results[task_name] = summary
    files.write_json(results_path, all_results)
    logging.info("%s median over %d seed(s): %s", task_name, num_seeds,
                 summary["median"])
    print(f"{task_name}: " + ", ".join(
        f"{key}={value:.4f}" for key, value in sorted(summary["median"].items())))
  return all_results


def main(argv):
  del argv
  try:
    _parse_gin(flags.FLAGS.gin_file, flags.FLAGS.gin_bindings,
               flags.FLAGS.task)
    run(flags.FLAGS.task, flags.FLAGS.glue_dir, flags.FLAGS.init_checkpoint,
        flags.FLAGS.model_dir, flags.FLAGS.vocab_file, flags.FLAGS.lower_case,
        flags.FLAGS.num_seeds,
        squad_files=(flags.FLAGS.train_file, flags.FLAGS.predict_file,
                     flags.FLAGS.train_articles, flags.FLAGS.predict_articles),
        init_tower=flags.FLAGS.init_tower)
  except errors.UserError as error:
    command_line.exit_with_error(error, flags.FLAGS.verbose)
  except preemption.Preempted as preempted:
    command_line.exit_preempted(preempted)


if __name__ == "__main__":
  flags.mark_flags_as_required(["task", "model_dir"])
  app.run(main)
