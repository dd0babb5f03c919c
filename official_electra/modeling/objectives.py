"""One spec per pretraining objective: what it trains and what it accepts.

Every place that behaves differently by objective reads the objective's
`ObjectiveSpec` here instead of comparing its name: the pretrainer's forward
pass and losses (`models/electra_pretrainer.py`), the heads and towers of the
model it trains (`model_config.py`), its training FLOPs (`training/flops.py`),
its setting checks (`check_settings`, used by `run_pretraining` and the
pretrainer) and the study's plan (`experiments/study_plan.py`).

The objectives of Clark et al. (2020): ELECTRA (Section 2), the BERT masked
LM baseline, the Section 3.2 ablations and the Section 3.3 alternative
training algorithms (Two-Stage and Adversarial ELECTRA). Adding an objective
is one new `ObjectiveSpec` in `SPECS` (and, when it needs behaviour no field
describes, a new field read where that behaviour lives), its gin file and its
tests.
"""

import dataclasses
from typing import Optional

from official_electra.modeling import errors

# What the main network (the one kept after pretraining) is trained to do.
DETECTS_REPLACEMENTS = "replaced_token_detection"  # a per-token binary head
PREDICTS_MASKED = "masked_lm"  # a masked LM at the masked slots
PREDICTS_ALL_TOKENS = "all_tokens_lm"  # a masked LM at every token, with copy
MAIN_TASKS = (DETECTS_REPLACEMENTS, PREDICTS_MASKED, PREDICTS_ALL_TOKENS)

# Where replacements come from.
NO_SAMPLER = "none"  # no replacement: masked slots hold [MASK] (BERT)
ANY_SAMPLER = "any"  # a generator network, or a uniform or unigram sampler
GENERATOR_NETWORK = "network"  # a generator network that the objective trains
SAMPLERS = (NO_SAMPLER, ANY_SAMPLER, GENERATOR_NETWORK)


class ObjectiveError(errors.UserError, ValueError):
  """An unknown objective, or settings its spec does not accept."""


@dataclasses.dataclass(frozen=True)
class ObjectiveSpec:
  """What one pretraining objective trains.

  Attributes:
    name: the `run_pretraining.objective` value.
    main_task: one of `MAIN_TASKS`: the main network's training task.
    sampler: one of `SAMPLERS`.
    rtd_on_masked_only: the replaced-token-detection loss is over the masked
      slots only (ELECTRA 15%), not every token.
    two_stage: trained in two stages (Two-Stage ELECTRA): a masked LM of the
      discriminator's size alone, then the discriminator alone on its frozen
      samples; the towers have their own embeddings and the same size.
    reinforce: the generator is trained adversarially by REINFORCE with a
      learned baseline (Adversarial ELECTRA).
  """
  name: str
  main_task: str
  sampler: str = ANY_SAMPLER
  rtd_on_masked_only: bool = False
  two_stage: bool = False
  reinforce: bool = False

  @property
  def samples_replacements(self) -> bool:
    """Masked slots get sampled tokens (every objective but BERT's MLM)."""
    return self.sampler != NO_SAMPLER

  @property
  def detects_replacements(self) -> bool:
    """The main network is a discriminator (has the RTD head)."""
    return self.main_task == DETECTS_REPLACEMENTS

  @property
  def main_network_mlm(self) -> bool:
    """The main network predicts tokens of a corrupted input (Replace and
    All-Tokens MLM): its loss is reported as `main_mlm`."""
    return self.samples_replacements and not self.detects_replacements

  @property
  def ties_embeddings(self) -> bool:
    """The two towers share one embedding block (all but Two-Stage)."""
    return not self.two_stage

  def has_generator_network(self, uniform_generator=False,
                            unigram_generator=False) -> bool:
    """Whether a run with these samplers trains a generator network."""
    if self.sampler == NO_SAMPLER:
      return False
    return not (uniform_generator or unigram_generator)

  def heads(self, has_generator_network) -> tuple:
    """The heads (`model_config.HEAD_ATTRIBUTES` keys) the objective trains."""
    heads = {"generator"} if has_generator_network else set()
    if self.detects_replacements:
      heads.add("discriminator")
    if not self.detects_replacements or self.two_stage:
      heads.add("mlm")
    if self.main_task == PREDICTS_ALL_TOKENS:
      heads.add("copy")
    if self.reinforce:
      heads.add("reinforce_baseline")
    return tuple(sorted(heads))

  def generator_config(self, encoder, generator_hidden_fraction,
                       generator_layers_fraction, uniform_generator=False,
                       unigram_generator=False):
    """The generator's `EncoderConfig`, or None without a generator network
    (Two-Stage's is the discriminator's size, Section 3.3)."""
    if not self.has_generator_network(uniform_generator, unigram_generator):
      return None
    if self.two_stage:
      return encoder
    return encoder.scaled(generator_hidden_fraction, generator_layers_fraction)

  def check_settings(self, num_train_steps=None, generator_hidden_fraction=1.0,
                     generator_layers_fraction=1.0, uniform_generator=False,
                     unigram_generator=False, disallow_correct=False,
                     two_stage_generator_steps=None, adversarial_mle_steps=0):
    """Raises `ObjectiveError` for settings this objective cannot use.

    The names are `run_pretraining`'s; `num_train_steps` None skips the
    checks that need it.
    """
    if uniform_generator and unigram_generator:
      raise ObjectiveError(
          "uniform_generator and unigram_generator are both set: choose one")
    if unigram_generator and (not self.samples_replacements or
                              disallow_correct):
      raise ObjectiveError(
          "unigram_generator replaces the generator of the ELECTRA objectives "
          "and does not take disallow_correct: unset one of "
          f"objective={self.name!r} / disallow_correct / unigram_generator")
    if not self.samples_replacements and uniform_generator:
      raise ObjectiveError(
          f"objective={self.name!r} masks with [MASK] and samples nothing: "
          "unset run_pretraining.uniform_generator")
    if self.sampler == GENERATOR_NETWORK and (uniform_generator or
                                              unigram_generator):
      raise ObjectiveError(
          f"objective={self.name!r} trains its generator network: unset "
          "run_pretraining.uniform_generator / unigram_generator")
    if self.two_stage != (two_stage_generator_steps is not None):
      raise ObjectiveError(
          "run_pretraining.two_stage_generator_steps (the steps of stage 1) is "
          "needed by, and only by, objective='two_stage' (objective is "
          f"{self.name!r}): set both or neither")
    if self.two_stage:
      if (num_train_steps is not None and
          two_stage_generator_steps >= num_train_steps):
        raise ObjectiveError(
            f"two_stage_generator_steps={two_stage_generator_steps} leaves no "
            f"step of stage 2 in num_train_steps={num_train_steps}: raise "
            "num_train_steps above it")
      if (generator_hidden_fraction, generator_layers_fraction) != (1.0, 1.0):
        raise ObjectiveError(
            "Two-Stage's generator is the discriminator's size (Clark et al., "
            "2020, Section 3.3): set run_pretraining.generator_hidden_fraction "
            "= 1.0 and run_pretraining.generator_layers_fraction = 1.0")
    if adversarial_mle_steps and not self.reinforce:
      raise ObjectiveError(
          f"run_pretraining.adversarial_mle_steps={adversarial_mle_steps} is "
          f"for objective='adversarial', not {self.name!r}: set it to 0")


SPECS = {spec.name: spec for spec in (
    # ELECTRA (Section 2): a small generator's samples, a discriminator.
    ObjectiveSpec("electra", DETECTS_REPLACEMENTS),
    # BERT's masked LM: the main network predicts [MASK]ed tokens.
    ObjectiveSpec("mlm", PREDICTS_MASKED, sampler=NO_SAMPLER),
    # Section 3.2: ELECTRA's loss on the masked slots only.
    ObjectiveSpec("electra_15", DETECTS_REPLACEMENTS, rtd_on_masked_only=True),
    # Section 3.2: masked slots hold samples; the main network predicts the
    # originals there.
    ObjectiveSpec("replace_mlm", PREDICTS_MASKED),
    # Section 3.2: as Replace MLM at every token, through a copy mechanism.
    ObjectiveSpec("all_tokens_mlm", PREDICTS_ALL_TOKENS),
    # Section 3.3: Two-Stage ELECTRA.
    ObjectiveSpec("two_stage", DETECTS_REPLACEMENTS, sampler=GENERATOR_NETWORK,
                  two_stage=True),
    # Section 3.3, Appendix F: Adversarial ELECTRA.
    ObjectiveSpec("adversarial", DETECTS_REPLACEMENTS,
                  sampler=GENERATOR_NETWORK, reinforce=True),
)}
OBJECTIVES = tuple(SPECS)
DEFAULT_OBJECTIVE = "electra"


def get(name: Optional[str]) -> ObjectiveSpec:
  """The spec of objective `name` (None: the default, ELECTRA).

  Raises:
    ObjectiveError: for an unknown name, listing the known ones.
  """
  if name is None:
    name = DEFAULT_OBJECTIVE
  if isinstance(name, ObjectiveSpec):
    return name
  try:
    return SPECS[name]
  except (KeyError, TypeError):
    raise ObjectiveError(f"unknown objective {name!r}; choose one of "
                         f"{OBJECTIVES}") from None
