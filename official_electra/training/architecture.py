"""What a pretraining run trains, recorded in its model_dir.

The first run writes `model_dir/model_config.json` (`modeling/model_config.py`):
its `model` section (the weights: towers, heads, vocabulary ids, sequence
length) and its `pretraining` section (objective, generator fractions and
sizing rule, sampler, masking rate). A run that resumes in that model_dir must
configure the same, or it stops with the difference instead of a shape error
deep inside a restore (or, worse, a silently different model).
"""

import dataclasses
import os
from typing import Optional

from official_electra import errors
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling import objectives
from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.models import electra_model
from official_electra.modeling.models import electra_pretrainer

MODEL_CONFIG_FILE = model_config_lib.MODEL_CONFIG_FILE
# Never masked: padding, the segment markers and `[MASK]` itself.
NEVER_MASKED_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[MASK]")


class ArchitectureMismatchError(errors.UserError):
  """The configured model differs from the one trained in model_dir."""


@dataclasses.dataclass(frozen=True)
class PretrainingArchitecture:
  """The shape-defining settings of an `ElectraPretrainer`.

  Attributes:
    encoder: the discriminator's (main network's) `EncoderConfig`.
    generator_hidden_fraction: generator width as a fraction of the
      discriminator's (1/4 Small, 1/3 Base, 1/4 Large, 1.0 Small++).
    generator_layers_fraction: generator depth fraction (1.0 in the paper).
    objective: the name of an objective (`objectives.SPECS`).
    uniform_generator: sample replacements uniformly (no generator network).
    unigram_generator: sample replacements from the data's token frequencies
      (no generator network; the dataset's `token_counts.txt`).
    max_seq_length: tokens per sequence.
    mask_prob: fraction of tokens masked.
    masking_scheme: what is masked (`span_masking.SCHEMES`): tokens, spans of
      whole words or whole words. Not a weight, but the data the objective
      learns from: a run resumes only with the scheme it started with. A
      folder recorded before the option existed masked tokens.
    special_token_ids: ids of `[PAD] [UNK] [CLS] [SEP] [MASK]`.
    lower_case: whether the vocabulary is uncased (text lower-cased and
      accents stripped before WordPiece), for the export's tokenizer.
    generator_sizing: the name of the rule `EncoderConfig.scaled` sizes the
      generator by (`encoder_config.GENERATOR_SIZING`, the only one),
      recorded so a model_dir trained by another rule does not resume.
  """
  encoder: encoder_config_lib.EncoderConfig
  generator_hidden_fraction: float
  generator_layers_fraction: float
  objective: str
  uniform_generator: bool
  max_seq_length: int
  mask_prob: float
  special_token_ids: dict
  lower_case: bool = True
  generator_sizing: str = encoder_config_lib.GENERATOR_SIZING
  unigram_generator: bool = False
  masking_scheme: str = "tokens"

  @property
  def max_predictions_per_seq(self):
    return dynamic_masking.max_predictions_per_seq(self.max_seq_length,
                                                   self.mask_prob)

  @property
  def spec(self) -> objectives.ObjectiveSpec:
    """The objective's `ObjectiveSpec`."""
    return objectives.get(self.objective)

  @property
  def has_generator_network(self):
    return self.spec.has_generator_network(self.uniform_generator,
                                           self.unigram_generator)

  def model_config(self) -> model_config_lib.ModelConfig:
    """The weights this run trains (the model section of its config)."""
    return model_config_lib.pretraining_model_config(
        self.encoder, self.objective, self.generator_hidden_fraction,
        self.generator_layers_fraction, self.uniform_generator,
        self.unigram_generator, self.special_token_ids, self.lower_case,
        self.max_seq_length)

  def generator_config(self) -> Optional[encoder_config_lib.EncoderConfig]:
    # Two-Stage's generator is the discriminator's size (Section 3.3: the
    # discriminator is initialised from the generator).
    return self.spec.generator_config(
        self.encoder, self.generator_hidden_fraction,
        self.generator_layers_fraction, self.uniform_generator,
        self.unigram_generator)

  def pretraining_settings(self):
    """The pretraining section of the model config."""
    return {key: getattr(self, key)
            for key in model_config_lib.PRETRAINING_KEYS}

  def to_dict(self):
    return dataclasses.asdict(self)

  @classmethod
  def from_recorded(cls, recorded):
    """The architecture of a `model_config.RecordedConfig` with a pretraining
    section."""
    model = recorded.model
    return cls(encoder=model.discriminator,
               special_token_ids=dict(model.special_token_ids),
               lower_case=model.lower_case,
               max_seq_length=model.max_seq_length, **recorded.pretraining)


def never_masked_token_ids(special_token_ids):
  """The ids masking never picks (`[PAD] [CLS] [SEP] [MASK]`), from a
  vocabulary's `special_token_ids()`."""
  return [special_token_ids[token] for token in NEVER_MASKED_TOKENS]


def build_pretrainer(architecture, seed, generator_loss_weight=1.0,
                     discriminator_loss_weight=50.0, temperature=1.0,
                     disallow_correct=False,
                     masking_draws="without_replacement",
                     unigram_counts=None, adversarial_mle_steps=0,
                     gradient_accumulation_steps=1,
                     continuation_token_ids=()):
  """A new `ElectraPretrainer` whose towers share one embedding block
  (Two-Stage: each tower has its own).

  Build it inside the strategy's scope. The sampling and masking options
  (`disallow_correct`, `masking_draws`), the vocabulary's
  `continuation_token_ids` (for span and whole-word masking), Adversarial
  ELECTRA's
  `adversarial_mle_steps` and `gradient_accumulation_steps` change no
  weight, so they are not part of the recorded architecture. `unigram_counts` (the data's token
  counts) is needed by, and only by, a unigram generator; no special token
  (`[UNK]` included) is ever drawn from it.
  """
  if architecture.unigram_generator != (unigram_counts is not None):
    raise ValueError("pass unigram_counts exactly when the architecture has "
                     "a unigram generator")
  if unigram_counts is not None:
    unigram_counts = list(unigram_counts)
    for token_id in architecture.special_token_ids.values():
      unigram_counts[token_id] = 0
  model = electra_model.ElectraModel.from_config(architecture.model_config())
  special = architecture.special_token_ids
  return electra_pretrainer.ElectraPretrainer(
      model=model, mask_token_id=special["[MASK]"],
      excluded_token_ids=never_masked_token_ids(special),
      max_predictions_per_seq=architecture.max_predictions_per_seq,
      mask_prob=architecture.mask_prob, objective=architecture.objective,
      generator_loss_weight=generator_loss_weight,
      discriminator_loss_weight=discriminator_loss_weight,
      temperature=temperature, uniform_generator=architecture.uniform_generator,
      unigram_counts=unigram_counts, seed=seed, disallow_correct=disallow_correct,
      masking_draws=masking_draws,
      masking_scheme=architecture.masking_scheme,
      continuation_token_ids=continuation_token_ids,
      adversarial_mle_steps=adversarial_mle_steps,
      gradient_accumulation_steps=gradient_accumulation_steps,
      name="electra_pretrainer")


def read_architecture(model_dir):
  """The `PretrainingArchitecture` recorded in model_dir, or None (nothing
  recorded, or a folder no pretraining run wrote: an import)."""
  recorded = model_config_lib.read_model_config(model_dir)
  if recorded is None or recorded.pretraining is None:
    return None
  return PretrainingArchitecture.from_recorded(recorded)


def write_architecture(model_dir, architecture):
  """Writes model_dir's `model_config.json` (both sections)."""
  return model_config_lib.write_model_config(
      model_dir, architecture.model_config(),
      architecture.pretraining_settings())


def check_same_architecture(model_dir, recorded, configured):
  """Raises `ArchitectureMismatchError` naming every differing setting."""
  old, new = _flatten(recorded.to_dict()), _flatten(configured.to_dict())
  differences = [f"{key}: checkpoint {old.get(key)!r}, config {new.get(key)!r}"
                 for key in sorted(set(old) | set(new))
                 if old.get(key) != new.get(key)]
  if differences:
    raise ArchitectureMismatchError(
        f"{os.path.join(model_dir, MODEL_CONFIG_FILE)}: the gin config differs "
        f"from the model trained in this model_dir ({'; '.join(differences)}); "
        "use the gin files of that run, or a new --model_dir (start from its "
        "weights with --init_checkpoint)")


def _flatten(values, prefix=""):
  flat = {}
  for key, value in values.items():
    if isinstance(value, dict) and key != "special_token_ids":
      flat.update(_flatten(value, f"{prefix}{key}."))
    else:
      flat[f"{prefix}{key}"] = value
  return flat
