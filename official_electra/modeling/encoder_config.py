"""The hyperparameters of one ELECTRA tower, as a plain dataclass."""

import dataclasses
import json

from official_electra.modeling.layers import electra_embeddings
from official_electra.modeling.networks import electra_encoder


# The name of the rule `EncoderConfig.scaled` sizes a generator by (see
# there), recorded in a pretraining run's model_config.json.
GENERATOR_SIZING = "original"


@dataclasses.dataclass(frozen=True)
class EncoderConfig:
  """Architecture of an `ElectraEncoder` (the discriminator's, by convention).

  The defaults are ELECTRA-Small (Clark et al., 2020, Table 6).
  """
  vocab_size: int = 30522
  embedding_size: int = 128
  hidden_size: int = 256
  num_layers: int = 12
  num_attention_heads: int = 4
  intermediate_size: int = 1024
  max_position_embeddings: int = 512
  type_vocab_size: int = 2
  dropout_rate: float = 0.1
  attention_dropout_rate: float = 0.1
  initializer_range: float = 0.02
  layer_norm_epsilon: float = 1e-12

  def scaled(self, hidden_fraction, layers_fraction=1.0):
    """The generator's config, sized as the original sizes it.

    The original (run_pretraining.py, `get_generator_config`; the fractions
    are configure_pretraining.py's `generator_hidden_size` and
    `generator_layers`) rounds the hidden size and the number of layers times
    their fractions, then sets the FFN width to 4 x the generator's hidden
    size and the heads to `max(1, hidden // 64)`, whatever the
    discriminator's FFN width and heads; the embedding size and everything
    else are the discriminator's. For the paper's sizes (Small 1/4, Base 1/3,
    Large 1/4, Small++ 1.0) this is the same as scaling the FFN and heads by
    the fraction.

    Args:
      hidden_fraction: e.g. 0.25 for Small, 1/3 for Base, 1.0 for Small++.
      layers_fraction: fraction of the layers (1.0 in the paper).

    Returns:
      A new `EncoderConfig`.
    """
    if not 0.0 < hidden_fraction <= 1.0 or not 0.0 < layers_fraction <= 1.0:
      raise ValueError("generator fractions must be in (0, 1], got "
                       f"{hidden_fraction} and {layers_fraction}")
    hidden_size = max(1, round(self.hidden_size * hidden_fraction))
    num_layers = max(1, round(self.num_layers * layers_fraction))
    return dataclasses.replace(
        self,
        hidden_size=hidden_size,
        intermediate_size=4 * hidden_size,
        num_attention_heads=max(1, hidden_size // 64),
        num_layers=num_layers)

  def to_json(self):
    return json.dumps(dataclasses.asdict(self), indent=2, sort_keys=True)

  @classmethod
  def from_dict(cls, values):
    unknown = set(values) - {field.name for field in dataclasses.fields(cls)}
    if unknown:
      raise ValueError(f"unknown EncoderConfig fields: {sorted(unknown)}")
    return cls(**values)


def build_embeddings(config):
  """A new `ElectraEmbeddings` for `config` (to share between two towers)."""
  return electra_embeddings.ElectraEmbeddings(
      vocab_size=config.vocab_size,
      embedding_size=config.embedding_size,
      max_position_embeddings=config.max_position_embeddings,
      type_vocab_size=config.type_vocab_size,
      dropout_rate=config.dropout_rate,
      initializer_range=config.initializer_range,
      layer_norm_epsilon=config.layer_norm_epsilon,
      name="embeddings")


def build_encoder(config, embedding_layer=None, name="discriminator"):
  """An `ElectraEncoder` for `config`, optionally on a shared embedding block."""
  return electra_encoder.ElectraEncoder(
      embedding_layer=embedding_layer, name=name, **dataclasses.asdict(config))
