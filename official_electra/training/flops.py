"""Training FLOPs of a pretraining step, counted analytically two ways.

`COUNTS` names the two; every function that prices a step takes `count`.

- `"paper"` (the default): the count on which Clark et al. (2020) place runs
  on their compute axis (Appendix D, Tables 1 and 8), that of the authors'
  `flops_computation.py` (google-research/electra) term by term and with its
  constants. 2 FLOPs per multiply-add. Per layer and token: the Q/K/V,
  attention-output and FFN matmuls and their biases, the attention scores and
  the weighted sum of the values, softmax (5 FLOPs an element), dropout (4),
  scaling the scores (1), GELU (8), the residual adds and LayerNorm (5). Per
  tower and token, the input embeddings as dense products (a one-hot vector
  times the table: 2 x E x V for the words, 2 x E x (S + 2) for the positions
  and token types), their sum, LayerNorm and dropout, and the E -> H
  projection when E != H. The MLM head ("output softmax": dense, GELU,
  LayerNorm, the tied E -> V projection, softmax and picking the target word)
  at the masked positions only (`max_predictions_per_seq / seq_length` of
  them: their `output_frac`); the binary classification head (dense, GELU,
  H -> 1) at every position. Training a network costs 2 x its forward pass
  (backward = forward). ELECTRA is their `get_electra_train_flops`: the
  discriminator with the classification head plus the generator with the MLM
  head, each tower paying for its own input embeddings.
- `"matmul"`: the matrix multiplications only (2 FLOPs per multiply-add): the
  E -> H projection, each layer's Q/K/V and output projections, attention
  scores, weighted sum and FFN, the discriminator head's two matmuls at every
  token and the MLM heads' dense and vocabulary projection at the masked
  positions. Lookups are gathers (no FLOPs); LayerNorm, softmax, GELU, dropout
  and biases are left out. Training costs 3 x the forward pass (backward =
  2 x forward: a product for the inputs' gradient and one for the weights').
  This is what the benchmarks (`official_electra/benchmark/`) set against
  measured matmul rates, and what the study records committed before the
  paper count existed were planned with.

The two differ most for small encoders with large vocabularies: the paper
count charges each tower 2 x E x V a token for its dense lookup, more than
all four layers of the study's encoder (E = H = 128, V = 7,985), so on it a
step with a generator costs much more than a masked LM's.

On either count a frozen network (Two-Stage's generator in stage 2) costs its
forward pass only, and sampling (Gumbel noise, uniform or unigram draws) and
the losses cost nothing: the authors' script has no rule for them.
"""

import dataclasses
from typing import Callable, Optional

from official_electra.modeling import objectives

PAPER = "paper"
MATMUL = "matmul"
COUNTS = (PAPER, MATMUL)

# Two-Stage's stages cost as these objectives' steps.
_MASKED_LM = objectives.get("mlm")
_DETECTOR = objectives.get("electra")

# The paper count's FLOPs per element, the authors' constants.
_DROPOUT = 4  # A random number, a comparison, the mask and the rescaling.
_LAYER_NORM = 5  # Mean, variance (square and sum), scale and shift.
_GELU = 8  # The operations of its tanh approximation.
_SOFTMAX = 5  # Subtracting the max, exp, sum, divide.
# Picking the target word's probability, per vocabulary entry (the authors'
# `output_target_word`).
_TARGET_WORD = 2
# The token types the authors' dense lookup multiplies by (with S positions).
_TOKEN_TYPES = 2


def matmul_tower_flops_per_token(config, seq_length):
  """The matmul count's forward FLOPs of one token through an encoder
  (embeddings to last layer).

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


def matmul_mlm_head_flops_per_prediction(hidden_size, embedding_size,
                                         vocab_size):
  """The matmul count of an MLM head at one slot: dense(H -> E), then the
  tied vocabulary projection (E -> V)."""
  return 2 * hidden_size * embedding_size + 2 * embedding_size * vocab_size


def matmul_classifier_flops_per_token(hidden_size):
  """The matmul count of a per-token binary head: dense(H -> H), H -> 1."""
  return 2 * hidden_size * hidden_size + 2 * hidden_size


def paper_layer_flops_per_token(config, seq_length):
  """The paper count's forward FLOPs of one transformer layer, per token.

  The authors' `get_block_flops` (divided by S) for an encoder whose heads
  together span the hidden size, as ours do.
  """
  hidden = config.hidden_size
  inner = config.intermediate_size
  score_elements = seq_length * config.num_attention_heads
  attention = (
      3 * (2 * hidden * hidden + hidden)  # Q, K and V with their biases.
      + 2 * hidden * seq_length  # Scores.
      + (_SOFTMAX + _DROPOUT + 1) * score_elements  # Softmax, dropout, scale.
      + 2 * hidden * seq_length  # Weighted sum of the values.
      + 2 * hidden * hidden + hidden  # Output projection and its bias.
      + _DROPOUT * hidden + hidden  # Dropout and the residual add.
      # The authors' attention LayerNorm costs 5 FLOPs a token, not 5 x H
      # (their `attn_output_layer_norm` lacks the x h of the FFN's): a slip
      # in their script, kept so that the totals are theirs.
      + _LAYER_NORM)
  feed_forward = (
      2 * hidden * inner + inner + _GELU * inner  # Intermediate, bias, GELU.
      + 2 * hidden * inner + hidden  # Output and its bias.
      + _DROPOUT * hidden + hidden + _LAYER_NORM * hidden)
  return attention + feed_forward


def paper_input_embedding_flops_per_token(config, seq_length):
  """The paper count's forward FLOPs of one token's input embeddings.

  Every lookup is a dense product of a one-hot vector and its table, as the
  authors assume; the position table has S rows in their count (not
  `max_position_embeddings`).
  """
  embedding = config.embedding_size
  flops = (2 * embedding * config.vocab_size  # The words.
           + 2 * embedding * (seq_length + _TOKEN_TYPES)  # Positions, types.
           + 2 * embedding  # Adding the three.
           + (_LAYER_NORM + _DROPOUT) * embedding)
  if embedding != config.hidden_size:
    flops += 2 * embedding * config.hidden_size + config.hidden_size
  return flops


def paper_tower_flops_per_token(config, seq_length):
  """The paper count's forward FLOPs of one token through an encoder."""
  return (config.num_layers * paper_layer_flops_per_token(config, seq_length)
          + paper_input_embedding_flops_per_token(config, seq_length))


def paper_mlm_head_flops_per_prediction(hidden_size, embedding_size,
                                        vocab_size):
  """The paper count of an MLM head at one slot (the authors' output
  softmax): dense(H -> E) and its bias, GELU, LayerNorm, the tied E -> V
  projection (its bias is not in their count), softmax, the target word."""
  return (2 * hidden_size * embedding_size + embedding_size
          + (_GELU + _LAYER_NORM) * embedding_size
          + 2 * embedding_size * vocab_size
          + (_SOFTMAX + _TARGET_WORD) * vocab_size)


def paper_classifier_flops_per_token(hidden_size):
  """The paper count of a per-token binary head (the authors' binary
  classification): dense(H -> H), its bias, GELU, then H -> 1 (no bias)."""
  return 2 * hidden_size * hidden_size + hidden_size + _GELU * hidden_size + (
      2 * hidden_size)


def baseline_flops_per_prediction(hidden_size):
  """Adversarial ELECTRA's REINFORCE baseline, dense(H -> 1), at one slot.

  The same on both counts: the authors' script has no rule for it, and
  their classification head's H -> 1 logit is 2 x H with no bias.
  """
  return 2 * hidden_size


@dataclasses.dataclass(frozen=True)
class _Prices:
  """How one count prices the parts of a step (forward FLOPs)."""
  tower_per_token: Callable[..., int]
  mlm_head_per_prediction: Callable[..., int]
  classifier_per_token: Callable[[int], int]
  # Forward and backward passes of a trained network, in forward passes.
  trained_passes: int


_PRICES = {
    PAPER: _Prices(paper_tower_flops_per_token,
                   paper_mlm_head_flops_per_prediction,
                   paper_classifier_flops_per_token, trained_passes=2),
    MATMUL: _Prices(matmul_tower_flops_per_token,
                    matmul_mlm_head_flops_per_prediction,
                    matmul_classifier_flops_per_token, trained_passes=3),
}


def _prices(count):
  if count not in _PRICES:
    raise ValueError(f"unknown FLOPs count {count!r}: one of "
                     f"{', '.join(map(repr, COUNTS))}")
  return _PRICES[count]


@dataclasses.dataclass(frozen=True)
class PretrainingFlops:
  """FLOPs of one pretraining step per example.

  Attributes:
    forward_per_example: forward-pass FLOPs of one sequence through what
      trains.
    frozen_forward_per_example: forward-pass FLOPs of what runs without
      training (no backward pass).
    count: the count (`COUNTS`) of both.
  """
  forward_per_example: int
  frozen_forward_per_example: int = 0
  count: str = PAPER

  @property
  def train_per_example(self):
    """Forward and backward of what trains (2 x forward on the paper count,
    3 x on the matmul count), plus the frozen forward pass."""
    return (_prices(self.count).trained_passes * self.forward_per_example
            + self.frozen_forward_per_example)


@dataclasses.dataclass(frozen=True)
class TrainFlopsSchedule:
  """Cumulative training FLOPs of a run whose step cost changes once
  (Two-Stage ELECTRA), or never (`switch_step` None).

  Attributes:
    first_per_step: FLOPs of a step before `switch_step`.
    later_per_step: FLOPs of a step from `switch_step` on.
    switch_step: the first step at the later cost, or None.
    count: the count (`COUNTS`) of the step costs.
  """
  first_per_step: float
  later_per_step: Optional[float] = None
  switch_step: Optional[int] = None
  count: str = PAPER

  def at(self, step):
    """Training FLOPs of steps `[0, step)`."""
    if self.switch_step is None or step <= self.switch_step:
      return step * self.first_per_step
    return (self.switch_step * self.first_per_step
            + (step - self.switch_step) * self.later_per_step)

  def between(self, start, end):
    return self.at(end) - self.at(start)

  def steps_for(self, train_flops):
    """The (fractional) step count whose training FLOPs are `train_flops`."""
    first = (self.switch_step * self.first_per_step
             if self.switch_step is not None else None)
    if first is None or train_flops <= first:
      return train_flops / self.first_per_step
    return self.switch_step + (train_flops - first) / self.later_per_step


def pretraining_flops(discriminator_config, generator_config, objective,
                      seq_length, max_predictions_per_seq, stage=None,
                      count=PAPER):
  """Analytic FLOPs of one pretraining example.

  Each objective is priced as the authors' script prices ELECTRA and BERT:
  the towers, plus each network's head at the positions it predicts. Where
  the script has no rule (the ablations and Section 3.3's algorithms), the
  comments below say what is counted.

  Args:
    discriminator_config: the main network's `EncoderConfig`.
    generator_config: the generator's `EncoderConfig`, or None (`mlm`, or a
      uniform or unigram generator: sampling costs nothing).
    objective: an objective's name or `objectives.ObjectiveSpec`.
    seq_length: tokens per sequence.
    max_predictions_per_seq: masked slots per sequence (on the paper count,
      `max_predictions_per_seq / seq_length` is the authors' `output_frac`).
    stage: `two_stage` only: 1 (a masked LM of the discriminator's size,
      as `mlm`) or 2 (the frozen generator's forward pass, and the
      discriminator trained as in `electra`).
    count: one of `COUNTS` (see the module's docstring).

  Returns:
    `PretrainingFlops`.

  Raises:
    ValueError: an unknown count, or a `two_stage` stage not 1 or 2.
  """
  prices = _prices(count)
  spec = objectives.get(objective)
  if spec.two_stage:
    # Stage 1 is a masked LM as `mlm`; stage 2 the frozen generator's forward
    # pass (a network that is not trained has no backward pass) and the
    # discriminator trained as in `electra`.
    if stage == 1:
      return pretraining_flops(discriminator_config, None, _MASKED_LM,
                               seq_length, max_predictions_per_seq,
                               count=count)
    if stage != 2:
      raise ValueError(f"two_stage FLOPs need stage 1 or 2, got {stage!r}")
    with_generator = pretraining_flops(
        discriminator_config, generator_config, _DETECTOR, seq_length,
        max_predictions_per_seq, count=count)
    alone = pretraining_flops(discriminator_config, None, _DETECTOR,
                              seq_length, max_predictions_per_seq,
                              count=count)
    return PretrainingFlops(
        forward_per_example=alone.forward_per_example,
        frozen_forward_per_example=(with_generator.forward_per_example
                                    - alone.forward_per_example),
        count=count)

  def tower(config):
    return seq_length * prices.tower_per_token(config, seq_length)

  def mlm_head(config, positions):
    # The head's E is the tower's (a generator shares the discriminator's
    # embedding size, as the authors' tied generator does).
    return positions * prices.mlm_head_per_prediction(
        config.hidden_size, config.embedding_size, config.vocab_size)

  classifier = seq_length * prices.classifier_per_token(
      discriminator_config.hidden_size)
  flops = tower(discriminator_config)
  if generator_config is not None:
    # The generator (ELECTRA's, and that of Replace and All-Tokens MLM,
    # ELECTRA 15% and Adversarial ELECTRA): its tower and MLM head.
    flops += tower(generator_config) + mlm_head(generator_config,
                                                max_predictions_per_seq)
  if spec.detects_replacements:
    # The classification head runs at every position (ELECTRA 15% too: only
    # its loss is limited to the masked ones).
    flops += classifier
    if spec.reinforce:
      # The REINFORCE baseline's head at the masked slots.
      flops += max_predictions_per_seq * baseline_flops_per_prediction(
          generator_config.hidden_size)
  elif spec.main_task == objectives.PREDICTS_MASKED:
    flops += mlm_head(discriminator_config, max_predictions_per_seq)
  else:
    # All-Tokens MLM: the MLM head at every position (output_frac 1, as the
    # authors count GPT) and the copy head, which has the classification
    # head's layers, at every position.
    flops += mlm_head(discriminator_config, seq_length) + classifier
  return PretrainingFlops(forward_per_example=flops, count=count)


def train_flops_schedule(discriminator_config, generator_config, objective,
                         seq_length, max_predictions_per_seq, batch_size,
                         two_stage_generator_steps=None, count=PAPER):
  """The `TrainFlopsSchedule` of a run (global batch of `batch_size`) on
  `count`: one step cost, or Two-Stage's two, switching at
  `two_stage_generator_steps`."""
  def per_step(stage=None):
    return batch_size * pretraining_flops(
        discriminator_config, generator_config, objective, seq_length,
        max_predictions_per_seq, stage, count).train_per_example
  if not objectives.get(objective).two_stage:
    return TrainFlopsSchedule(per_step(), count=count)
  return TrainFlopsSchedule(per_step(1), per_step(2),
                            two_stage_generator_steps, count=count)
