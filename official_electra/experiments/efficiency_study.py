"""The compute-matched efficiency study: pretrain each variant, fine-tune, compare.

The paper's central figure in miniature (Clark et al., 2020, Figures 1, 3 and
4): GLUE dev score against pretraining FLOPs, one line per pretraining variant,
a randomly initialised encoder at zero FLOPs. One call:

1. builds (or reuses) the vocabulary and the pretraining records from a corpus
   (`study_pretraining`);
2. pretrains the same discriminator once per variant to the same training
   FLOPs (`study_plan`), keeping a checkpoint at each fraction of the budget
   (`study_pretraining`);
3. fine-tunes a random initialisation and every kept checkpoint (the whole
   budget's first, then the smaller fractions) on each task with several
   seeds (the median over seeds is the score), seed-major: seed 0 of every
   encoder and task first (`study_finetuning`); seeds recorded by an
   earlier run elsewhere are restored, not run again (`study_records`);
4. probes every encoder frozen (`study_probes`: a linear model on its
   features, no fine-tuning), to tell what pretraining learned from how well
   the weights fine-tune;
5. writes `results.json`, `results.md` and `results.png` (`study_report`),
   with a progress line and ETA after each piece (`study_progress`).

Layout of `output_dir`:

    vocab.txt, data/                 the corpus's vocabulary and records
    pretrain/<variant>/              a pretraining model_dir (resumable)
        kept/step_<N>/               the checkpoint at one fraction, with its
                                     model_config.json, vocab.txt and the
                                     pretraining metrics at that step
    finetune/<encoder>/<TASK>/seed_<s>/   fine-tuning runs (resumable)
    probe/<encoder>/<TASK>.json      linear-probe dev metrics
    results.json, results.md, results.png

With `pretrained_from` (another study's `output_dir`), the study pretrains
nothing: it fine-tunes and probes that study's kept checkpoints (and its
vocabulary), so two fine-tuning protocols compare on the same encoders; the
other folder is only read.

Rerunning continues where a run stopped: finished pretraining segments and
fine-tuning seeds are not redone; an interrupted one resumes from its latest
checkpoint. Results are rewritten after every seed, so a stopped study leaves
what it has measured.
"""

import dataclasses
import os
import time
from typing import Callable, NamedTuple, Optional, Sequence

import tensorflow as tf

from official_electra import files
from official_electra.experiments import paired_comparison
from official_electra.experiments import study_finetuning
from official_electra.experiments import study_plan
from official_electra.experiments import study_probes
from official_electra.experiments import study_pretraining
from official_electra.experiments import study_progress
from official_electra.experiments import study_records
from official_electra.experiments import study_report
from official_electra.experiments import task_text
from official_electra.finetuning import tasks as tasks_lib
from official_electra.finetuning import trainer
from official_electra.modeling import checkpoints
from official_electra.modeling import objectives
from official_electra.modeling import pretrained
from official_electra.tokenization import vocabulary
from official_electra.tokenization import wordpiece_tokenizer
from official_electra.training import flops
from tfrecords_tools import build_vocab

TASK_TEXT_FILE = "task_text.txt"
RANDOM_INIT = study_report.RANDOM_INIT
DISCRIMINATOR, GENERATOR = pretrained.TOWERS


class _Encoder(NamedTuple):
  """One encoder the study fine-tunes and probes."""
  variant: str  # its rows' name: random_init, a plan's, or <plan>_generator
  kept_dir: Optional[str]  # None for random init
  step: int
  train_flops: float
  plan: Optional[study_plan.PretrainingPlan]
  tower: str

  @property
  def id(self) -> str:
    """Its folder under finetune/ and probe/."""
    return study_report.encoder_id(self.variant, self.step)


@dataclasses.dataclass(frozen=True)
class StudySettings:
  """Everything the study trains and measures, but the paths.

  Attributes:
    encoder: the discriminator's `EncoderConfig` (its `vocab_size` is replaced
      by the vocabulary's).
    pretraining: `run_pretraining` settings shared by every variant
      (`train_batch_size`, `max_seq_length`, `learning_rate`, ...).
    variants: `{name: settings}` the study may run (`study_plan`).
    budget_flops: training FLOPs of each pretraining run, on `flops_count`.
    checkpoint_fractions: fractions of the budget kept for fine-tuning.
    warmup_proportion: fraction of each run's steps of warm-up.
    finetuning: the `FinetuneHyperparameters` of every fine-tuning run.
    num_seeds: fine-tuning seeds per encoder and task.
    vocab_size: largest size of a vocabulary built from the corpus.
    vocab_max_words: distinct words (the most frequent) the vocabulary
      learner reads (`build_vocab.build_vocab`'s `max_words`).
    lower_case: lower-case and strip accents.
    num_shards: record files of the built dataset.
    linear_probe: also probe each encoder frozen (`linear_probe`).
    selection_probe: also probe each encoder on two halves of a sample of
      each task's training set (`linear_probe.probe_training_split`; no dev
      set), a measure for choosing pretraining settings.
    task_text_copies: task-adaptive pretraining: when above 0, the training
      sentences of the scored tasks (labels dropped; never dev or test) are
      written this many times to `task_text.txt` and added to the corpus of
      the vocabulary and the records (`task_text`).
    finetune_generators: names of studied variants whose generator tower is
      also fine-tuned at every kept checkpoint (at its own size), as variant
      `<variant>_generator` (issue 44: the generator as an encoder); each
      must train a generator network.
    random_init_own_recipe: fine-tune random init by a recipe of its own
      (`finetuning_of`): no layer-wise decay. The decay (0.8 a block)
      keeps a pretrained encoder's lower layers near what they learned; a
      random encoder's lower layers have nothing to keep, and under it the
      bottom block of the study's 4-layer encoder trains at 0.41x the
      rate and its embeddings at 0.33x. The learning rate is the one the
      same rule gives every encoder (the paper's Table 7 value for the
      size, `finetuning.learning_rate`, never tuned per encoder). False:
      random init takes the pretrained encoders' recipe, as in every study
      recorded before this setting (their gin files bind False).
    flops_count: how the budget's FLOPs are counted (`flops.COUNTS`):
      `paper`, the paper's compute axis (Clark et al., 2020, Appendix D), or
      `matmul`, on which the records committed before it were planned.
  """
  encoder: object
  pretraining: dict
  variants: dict
  budget_flops: float
  checkpoint_fractions: tuple = (0.25, 0.5, 1.0)
  warmup_proportion: float = 0.1
  # The recipe every run of the study has used (the gin files pin it too).
  finetuning: trainer.FinetuneHyperparameters = (
      trainer.FinetuneHyperparameters(recipe="paper"))
  num_seeds: int = 3
  vocab_size: int = 8192
  vocab_max_words: int = build_vocab.DEFAULT_MAX_WORDS
  lower_case: bool = True
  num_shards: int = 8
  linear_probe: bool = True
  task_text_copies: int = 0
  selection_probe: bool = False
  finetune_generators: Sequence[str] = ()
  flops_count: str = flops.PAPER
  random_init_own_recipe: bool = True

  def finetuning_of(self, variant):
    """The fine-tuning hyperparameters of `variant`'s encoder: `finetuning`,
    but for random init under its own recipe without layer-wise decay."""
    if variant == RANDOM_INIT and self.random_init_own_recipe:
      return dataclasses.replace(self.finetuning, layerwise_decay_rate=1.0)
    return self.finetuning


def _study_encoders(plans, pretrain_root, settings):
  """Random init, then each plan's kept steps (and generators, when the
  settings fine-tune them), the whole budget first: the comparison the
  study is for is there soonest."""
  encoders = []
  for plan in plans:
    model_dir = os.path.join(pretrain_root, plan.name)
    towers = [(plan.name, DISCRIMINATOR)]
    if plan.name in settings.finetune_generators:
      towers.append((f"{plan.name}_{GENERATOR}", GENERATOR))
    for step in plan.checkpoint_steps:
      kept_dir = study_pretraining.kept_folder(model_dir, step)
      encoders += [_Encoder(variant, kept_dir, step, plan.train_flops_at(step),
                            plan, tower)
                   for variant, tower in towers]
  encoders.sort(key=lambda e: -e.step / e.plan.num_train_steps)
  return [_Encoder(RANDOM_INIT, None, 0, 0.0, None, DISCRIMINATOR)] + encoders


def _check_generator_variants(plans, names):
  """Every name in `finetune_generators` is a studied variant with a
  generator network.

  Raises:
    StudyConfigError: naming the first that is not.
  """
  by_name = {plan.name: plan for plan in plans}
  for name in names:
    if name not in by_name:
      raise study_plan.StudyConfigError(
          f"efficiency_study.finetune_generators names {name!r}, which this "
          f"study does not pretrain ({', '.join(by_name)}); add it to "
          "--variants or drop it from finetune_generators")
    settings = by_name[name].settings
    if not objectives.get(settings["objective"]).has_generator_network(
        settings.get("uniform_generator", False),
        settings.get("unigram_generator", False)):
      raise study_plan.StudyConfigError(
          f"efficiency_study.finetune_generators names {name!r}, which "
          "trains no generator network; name a variant that does (e.g. "
          "'electra')")


def run_study(output_dir: str, corpus: str, glue_dir: str,
              task_names: Sequence[str], variant_names: Sequence[str],
              settings: StudySettings, strategy,
              vocab_file: Optional[str] = None,
              log: Callable[[str], None] = print,
              pretrained_from: Optional[str] = None,
              finished_runs_from: Sequence[str] = ()) -> dict:
  """Runs (or continues) the study; returns what `results.json` holds.

  With `pretrained_from` (another study's `output_dir`, whose pretraining of
  the same variants, settings and budget has finished), `corpus` and
  `vocab_file` are unused: that study's vocabulary and kept checkpoints are
  fine-tuned and probed here.

  `finished_runs_from`: earlier `results.json` files of this study (from
  another machine): their finished seeds are not fine-tuned again
  (`study_records.restore_runs`, which checks they were made on these
  encoders and settings).

  Raises:
    StudyConfigError, the user errors of the data tools, pretraining and
    fine-tuning, and preemption.Preempted (on SIGTERM, after a checkpoint).
  """
  started = time.monotonic()
  task_names = [tasks_lib.get_task(name).name for name in task_names]

  def make_plans(vocab_size):
    encoder = dataclasses.replace(settings.encoder, vocab_size=vocab_size)
    plans = study_plan.plan_pretraining(
        variant_names, settings.variants, settings.pretraining, encoder,
        settings.budget_flops, settings.checkpoint_fractions,
        settings.warmup_proportion, settings.flops_count)
    _check_generator_variants(plans, settings.finetune_generators)
    return encoder, plans

  if pretrained_from:
    # Nothing to build: that study's vocabulary and kept checkpoints.
    vocab_file = study_pretraining.pretrained_vocab(pretrained_from)
    data_dir = None
    encoder, plans = make_plans(vocabulary.load_vocabulary(vocab_file).size)
    study_pretraining.check_pretrained(pretrained_from, plans)
    log(f"[study] no pretraining here: the kept checkpoints of "
        f"{pretrained_from}")
    tf.io.gfile.makedirs(output_dir)
  else:
    # Settings that cannot work fail now, not after the data is built.
    make_plans(vocabulary.load_vocabulary(vocab_file).size if vocab_file
               else settings.vocab_size)
    tf.io.gfile.makedirs(output_dir)
    if settings.task_text_copies:
      corpus = _with_task_text(corpus, output_dir, glue_dir, task_names,
                               settings.task_text_copies, log)
    vocab_file, data_dir = study_pretraining.prepare_data(
        corpus, output_dir, settings, vocab_file, log)
    encoder, plans = make_plans(vocabulary.load_vocabulary(vocab_file).size)
  pretrain_root = os.path.join(pretrained_from or output_dir, "pretrain")
  for plan in plans:
    log(f"[study] {plan.name}: {plan.num_train_steps} steps of "
        f"{plan.train_flops_per_step:.3g} FLOPs ({plan.flops_count} count) in "
        f"{plan.settings.get('mixed_precision', 'float32')}, checkpoints at "
        f"steps {', '.join(map(str, plan.checkpoint_steps))}")
  finetune_dir = os.path.join(output_dir, "finetune")
  encoders = _study_encoders(plans, pretrain_root, settings)
  pretraining_left = sum(
      study_pretraining.pretraining_flops_left(
          plan, os.path.join(pretrain_root, plan.name))
      for plan in plans)
  progress = study_progress.Progress(pretraining_left, {
      task: study_finetuning.runs_left(
          finetune_dir, [e.id for e in encoders], [task], settings.num_seeds)
      for task in task_names}, log)

  for plan in plans:
    study_pretraining.pretrain(
        plan, os.path.join(pretrain_root, plan.name), data_dir, vocab_file,
        encoder, strategy, progress)
  inits = {
      e.id: (encoder, {}) if e.kept_dir is None else (
          checkpoints.recorded_encoder_config(e.kept_dir, e.tower),
          files.read_json(os.path.join(
              e.kept_dir, study_pretraining.PRETRAINING_METRICS_FILE)))
      for e in encoders}
  for record_file in finished_runs_from:
    progress.restored(study_records.restore_runs(
        record_file, finetune_dir, encoders,
        {encoder_id: metrics for encoder_id, (_, metrics) in inits.items()},
        dataclasses.asdict(encoder), dataclasses.asdict(settings.finetuning),
        task_names, settings.num_seeds, log,
        dataclasses.asdict(settings.finetuning_of(RANDOM_INIT))))
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      vocab_file, lower_case=settings.lower_case)

  def write_results(runs):
    study_report.write_report(output_dir, _results(
        runs, plans, encoder, settings, task_names,
        time.monotonic() - started, pretrained_from))

  runs = study_finetuning.finetune_encoders(
      encoders, inits, task_names, glue_dir, tokenizer, settings,
      finetune_dir, progress, log, write_results)
  probes = {}
  if settings.linear_probe:
    probes["probes"] = study_probes.probe_encoders(
        encoders, encoder, task_names,
        study_probes.dev_probe(glue_dir, tokenizer, settings.finetuning),
        os.path.join(output_dir, study_probes.PROBE_DIR), log)
  if settings.selection_probe:
    probes["selection_probes"] = study_probes.probe_encoders(
        encoders, encoder, task_names,
        study_probes.selection_probe(glue_dir, tokenizer,
                                     settings.finetuning),
        os.path.join(output_dir, study_probes.SELECTION_PROBE_DIR), log)
  results = _results(runs, plans, encoder, settings, task_names,
                     time.monotonic() - started, pretrained_from, **probes)
  study_report.write_report(output_dir, results)
  written = [study_report.RESULTS_FILE, study_report.TABLE_FILE] + (
      [study_report.FIGURE_FILE] if runs else [])
  elapsed = study_progress.minutes(time.monotonic() - started)
  log(f"[study] done in {elapsed}: " + ", ".join(
      os.path.join(output_dir, name) for name in written))
  return results


def _with_task_text(corpus, output_dir, glue_dir, task_names, copies, log):
  """`corpus` plus the tasks' training text.

  The file is written anew each time, to the same bytes for the same tasks
  and copies, so the dataset tool still recognises a finished dataset.
  """
  path = os.path.join(output_dir, TASK_TEXT_FILE)
  written = task_text.write_task_text(path, glue_dir, task_names, copies)
  log(f"[study] task-adaptive text: {written['examples']} training examples "
      f"of {', '.join(task_names)} (no labels) x {copies} -> {path}")
  return f"{corpus},{path}"


def _results(runs, plans, encoder, settings, task_names, wall_seconds,
             pretrained_from=None, probes=None, selection_probes=None):
  return {
      "tasks": list(task_names),
      "pretrained_from": pretrained_from,
      "variants": [{"name": plan.name, "settings": plan.settings,
                    "train_flops_per_step": plan.train_flops_per_step,
                    "num_train_steps": plan.num_train_steps,
                    "checkpoint_steps": list(plan.checkpoint_steps)}
                   for plan in plans],
      "budget_flops": settings.budget_flops,
      # Records written before the field existed were on the matmul count.
      "flops_count": settings.flops_count,
      "encoder": dataclasses.asdict(encoder),
      "finetuning": dataclasses.asdict(settings.finetuning),
      "random_init_finetuning": dataclasses.asdict(
          settings.finetuning_of(RANDOM_INIT)),
      "num_seeds": settings.num_seeds,
      "wall_seconds_this_process": round(wall_seconds, 1),
      "runs": runs,
      "summary": study_report.summarize(runs, task_names),
      "paired": paired_comparison.paired_comparisons(runs, task_names),
      "probes": probes or [],
      "selection_probes": selection_probes or [],
  }
