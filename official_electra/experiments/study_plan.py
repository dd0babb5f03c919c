"""What each pretraining run of the efficiency study trains: compute-matched steps.

ELECTRA's claim is a better encoder for the same compute (Clark et al., 2020,
Section 3.4, Figures 1 and 4): the study pretrains every listed variant to the
same total training FLOPs, counted by `training.flops` for that variant (ELECTRA
pays for its generator, so MLM gets more steps of the same discriminator), and
keeps checkpoints at the same fractions of that budget.

The FLOPs are the paper's count by default (`flops_count="paper"`: Clark et
al., 2020, Appendix D, the authors' flops_computation.py), on which an
ELECTRA step of the study's small encoder costs about 1.55 MLM steps; the
study records committed before it were planned on the matmul count
(`flops_count="matmul"`, about 1.08), which their gin files bind.
"""

import dataclasses
from typing import Mapping, Sequence

from official_electra import errors
from official_electra.modeling import objectives
from official_electra.training import architecture as architecture_lib
from official_electra.training import flops

# Variant name -> `run_pretraining` settings that make it (paper Section 3.2).
# A gin file may add variants (other generator sizes, learning rates).
DEFAULT_VARIANTS = {
    "electra": {"objective": "electra"},
    "mlm": {"objective": "mlm"},
    "electra_15": {"objective": "electra_15"},
    "replace_mlm": {"objective": "replace_mlm"},
    "all_tokens_mlm": {"objective": "all_tokens_mlm"},
    "uniform_generator": {"objective": "electra", "uniform_generator": True},
    "unigram_generator": {"objective": "electra", "unigram_generator": True},
    # Section 3.3's alternative training algorithms (Figure 3, right).
    # Two-Stage: a generator of the discriminator's size; the plan gives each
    # stage the same number of steps.
    "two_stage": {"objective": "two_stage", "generator_hidden_fraction": 1.0,
                  "generator_layers_fraction": 1.0},
    "adversarial": {"objective": "adversarial"},
    # SpanBERT's span masking (whole words, Geo(0.2) lengths clipped at 10)
    # for either objective: the same budget, so the same FLOPs.
    "electra_spans": {"objective": "electra", "masking_scheme": "spans"},
    "mlm_spans": {"objective": "mlm", "masking_scheme": "spans"},
}
# Largest spread of the variants' training FLOPs at one kept checkpoint.
MAX_FLOPS_MISMATCH = 0.01


class StudyConfigError(errors.UserError):
  """The study's settings cannot give a fair comparison; says the fix."""


@dataclasses.dataclass(frozen=True)
class PretrainingPlan:
  """One variant's pretraining run.

  Attributes:
    name: the variant's name (a key of the variants mapping).
    settings: `run_pretraining` keyword arguments of this run (the study's
      shared settings updated by the variant's).
    train_flops_per_step: analytic training FLOPs of one optimizer step (of
      the first stage, for Two-Stage).
    num_train_steps: steps of the whole budget (the LR decays to 0 there).
    checkpoint_steps: the steps kept for fine-tuning, one per fraction.
    flops_schedule: the run's `flops.TrainFlopsSchedule` (Two-Stage's step
      cost changes at its switch), on the study's count.
  """
  name: str
  settings: dict
  train_flops_per_step: int
  num_train_steps: int
  checkpoint_steps: tuple
  flops_schedule: flops.TrainFlopsSchedule

  @property
  def flops_count(self):
    """The count (`flops.COUNTS`) of the plan's FLOPs."""
    return self.flops_schedule.count

  def train_flops_at(self, step):
    """Training FLOPs of the run's steps `[0, step)`."""
    return self.flops_schedule.at(step)

  def train_flops_between(self, start, end):
    return self.flops_schedule.between(start, end)


def step_train_flops(encoder, settings, flops_count=flops.PAPER):
  """Training FLOPs of one step of `run_pretraining(**settings)` (of its
  first stage, for Two-Stage) on `flops_count`."""
  return train_flops_schedule(encoder, settings, flops_count).first_per_step


def train_flops_schedule(encoder, settings, flops_count=flops.PAPER):
  """The `flops.TrainFlopsSchedule` of `run_pretraining(**settings)` on
  `flops_count` (one of `flops.COUNTS`)."""
  architecture = architecture_lib.PretrainingArchitecture(
      encoder=encoder,
      generator_hidden_fraction=settings.get("generator_hidden_fraction", 0.25),
      generator_layers_fraction=settings.get("generator_layers_fraction", 1.0),
      objective=settings.get("objective", "electra"),
      uniform_generator=settings.get("uniform_generator", False),
      unigram_generator=settings.get("unigram_generator", False),
      max_seq_length=settings["max_seq_length"],
      mask_prob=settings.get("mask_prob", 0.15), special_token_ids={})
  return flops.train_flops_schedule(
      encoder, architecture.generator_config(), architecture.objective,
      architecture.max_seq_length, architecture.max_predictions_per_seq,
      settings["train_batch_size"],
      settings.get("two_stage_generator_steps"), count=flops_count)


def plan_pretraining(variant_names: Sequence[str],
                     variants: Mapping[str, Mapping], shared_settings: Mapping,
                     encoder, budget_flops: float,
                     checkpoint_fractions: Sequence[float],
                     warmup_proportion: float,
                     flops_count: str = flops.PAPER):
  """The runs of the study, each to `budget_flops` training FLOPs.

  Args:
    variant_names: the variants to run, in order.
    variants: `{name: settings}` (see `DEFAULT_VARIANTS`).
    shared_settings: `run_pretraining` settings of every run (batch size,
      sequence length, learning rate, ...); a variant's own override them.
    encoder: the discriminator's `EncoderConfig` (the same for every run).
    budget_flops: total training FLOPs of each run.
    checkpoint_fractions: increasing fractions of the budget in (0, 1].
    warmup_proportion: fraction of each run's steps of linear warm-up.
    flops_count: how the FLOPs are counted, one of `flops.COUNTS`: `paper`
      (the paper's compute axis) or `matmul` (the committed records').

  Returns:
    A list of `PretrainingPlan`.

  Raises:
    StudyConfigError: an unknown variant or count, bad fractions, or a budget
      too small for the kept checkpoints' FLOPs to match within 1%.
  """
  if flops_count not in flops.COUNTS:
    raise StudyConfigError(
        f"efficiency_study.flops_count = {flops_count!r} is not a FLOPs "
        f"count: use one of {', '.join(map(repr, flops.COUNTS))}")
  unknown = [name for name in variant_names if name not in variants]
  if unknown:
    raise StudyConfigError(
        f"unknown variant(s) {', '.join(unknown)}; known: "
        f"{', '.join(sorted(variants))} (add more in the gin file's "
        "efficiency_study.variants)")
  fractions = tuple(float(fraction) for fraction in checkpoint_fractions)
  if (not fractions or list(fractions) != sorted(set(fractions))
      or not 0 < fractions[0] or fractions[-1] != 1.0):
    raise StudyConfigError(
        f"checkpoint_fractions {list(fractions)} must increase, lie in (0, 1] "
        "and end with 1.0, e.g. (0.25, 0.5, 1.0)")
  plans = []
  for name in variant_names:
    settings = dict(shared_settings)
    settings.update(variants[name])
    if objectives.get(settings.get("objective")).two_stage:
      num_train_steps = _plan_two_stage(encoder, settings, budget_flops,
                                        warmup_proportion, flops_count)
    else:
      num_train_steps = max(1, round(
          budget_flops / step_train_flops(encoder, settings, flops_count)))
      settings["num_warmup_steps"] = round(warmup_proportion *
                                           num_train_steps)
    schedule = train_flops_schedule(encoder, settings, flops_count)
    # The last fraction is 1.0: the run's end.
    checkpoint_steps = tuple(
        max(1, round(schedule.steps_for(fraction * budget_flops)))
        for fraction in fractions[:-1]) + (num_train_steps,)
    plans.append(PretrainingPlan(name, settings, schedule.first_per_step,
                                 num_train_steps, checkpoint_steps,
                                 schedule))
  for index, fraction in enumerate(fractions):
    achieved = [plan.train_flops_at(plan.checkpoint_steps[index])
                for plan in plans]
    target = fraction * budget_flops
    worst = max((abs(value - target) for value in achieved),
                default=0.0) / target
    if worst > MAX_FLOPS_MISMATCH:
      raise StudyConfigError(
          f"budget_flops={budget_flops:.3g} gives the {fraction:g} checkpoint "
          f"only {min(plan.checkpoint_steps[index] for plan in plans)} steps, "
          f"so its FLOPs differ by {100 * worst:.1f}% between variants (at "
          f"most {100 * MAX_FLOPS_MISMATCH:g}%): raise budget_flops or the "
          "smallest checkpoint fraction")
  return plans


def _plan_two_stage(encoder, settings, budget_flops, warmup_proportion,
                    flops_count):
  """Two-Stage's steps (set in `settings`), returning the total.

  The paper trains each stage for n steps (Section 3.3): by default n steps of
  each cost the budget. A variant that sets `two_stage_generator_steps` gets
  that stage 1 and a stage 2 of the rest of the budget. Each stage warms up
  for `warmup_proportion` of stage 1's steps.
  """
  stage_one = dict(settings, two_stage_generator_steps=1)
  schedule = train_flops_schedule(encoder, stage_one, flops_count)
  first, later = schedule.first_per_step, schedule.later_per_step
  stage_steps = settings.get("two_stage_generator_steps")
  if stage_steps is None:
    stage_steps = max(1, round(budget_flops / (first + later)))
    second_steps = stage_steps
  else:
    second_steps = round((budget_flops - stage_steps * first) / later)
    if second_steps < 1:
      raise StudyConfigError(
          f"two_stage_generator_steps={stage_steps} spends the whole budget "
          f"({budget_flops:.3g} FLOPs) in stage 1: lower it or raise "
          "budget_flops")
  settings["two_stage_generator_steps"] = stage_steps
  settings["num_warmup_steps"] = round(warmup_proportion * stage_steps)
  return stage_steps + second_steps
