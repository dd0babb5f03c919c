"""Training FLOPs counted analytically, as the paper places runs on its
compute axis (Clark et al., 2020, Appendix D and the authors' flops_computation.py).

Only the matrix multiplications are counted (2 FLOPs per multiply-add): the
embedding projection, each layer's Q/K/V/output projections, the attention
scores and the attention-weighted sum, the FFN, the discriminator head on
every token, and the generator (or MLM) head with its vocabulary projection at
the masked positions only. Training costs 3x the forward pass (backward = 2x
forward). Embedding lookups, LayerNorm, softmax and GELU are left out; they add
a few percent.
"""

import dataclasses


def encoder_forward_flops_per_token(config, seq_length):
  """Forward FLOPs of one token through an encoder (embeddings to last layer).

  Args:
    config: an `EncoderConfig`.
    seq_length: tokens per sequence (attention cost grows with it).

  Returns:
    FLOPs, an int.
  """
  hidden = config.hidden_size
  flops = 0
  if config.embedding_size != hidden:
    flops += 2 * config.embedding_size * hidden
  per_layer = (2 * 4 * hidden * hidden  # Q, K, V and attention output.
               + 2 * 2 * seq_length * hidden  # Scores and weighted sum.
               + 2 * 2 * hidden * config.intermediate_size)  # FFN.
  return flops + config.num_layers * per_layer


def mlm_head_flops_per_prediction(hidden_size, embedding_size, vocab_size):
  """Dense(H -> E) then the tied vocabulary projection (E -> V), one slot."""
  return 2 * hidden_size * embedding_size + 2 * embedding_size * vocab_size


@dataclasses.dataclass(frozen=True)
class PretrainingFlops:
  """FLOPs of one pretraining step per example.

  Attributes:
    forward_per_example: forward-pass FLOPs of one sequence.
    train_per_example: `3 x forward_per_example`.
  """
  forward_per_example: int

  @property
  def train_per_example(self):
    return 3 * self.forward_per_example


def pretraining_flops(discriminator_config, generator_config, objective,
                      seq_length, max_predictions_per_seq):
  """Analytic FLOPs of one pretraining example.

  Args:
    discriminator_config: the main network's `EncoderConfig`.
    generator_config: the generator's `EncoderConfig`, or None (`mlm`, or a
      uniform generator).
    objective: an `ElectraPretrainer` objective.
    seq_length: tokens per sequence.
    max_predictions_per_seq: masked slots per sequence.

  Returns:
    `PretrainingFlops`.
  """
  vocab_size = discriminator_config.vocab_size
  hidden = discriminator_config.hidden_size
  embedding = discriminator_config.embedding_size
  flops = seq_length * encoder_forward_flops_per_token(discriminator_config,
                                                       seq_length)
  if generator_config is not None:
    flops += seq_length * encoder_forward_flops_per_token(generator_config,
                                                          seq_length)
    flops += max_predictions_per_seq * mlm_head_flops_per_prediction(
        generator_config.hidden_size, embedding, vocab_size)
  if objective in ("electra", "electra_15"):
    flops += seq_length * (2 * hidden * hidden + 2 * hidden)
  elif objective in ("mlm", "replace_mlm"):
    flops += max_predictions_per_seq * mlm_head_flops_per_prediction(
        hidden, embedding, vocab_size)
  else:  # all_tokens_mlm: the MLM head and the copy head on every token.
    flops += seq_length * (
        mlm_head_flops_per_prediction(hidden, embedding, vocab_size)
        + 2 * hidden * hidden + 2 * hidden)
  return PretrainingFlops(forward_per_example=flops)
