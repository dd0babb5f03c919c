"""Training FLOPs counted analytically, as the paper places runs on its
compute axis (Clark et al., 2020, Appendix D and the authors' flops_computation.py).

Only the matrix multiplications are counted (2 FLOPs per multiply-add): the
embedding projection, each layer's Q/K/V/output projections, the attention
scores and the attention-weighted sum, the FFN, the discriminator head on
every token, and the generator (or MLM) head with its vocabulary projection at
the masked positions only. Training costs 3x the forward pass (backward = 2x
forward); a frozen network (Two-Stage's generator in stage 2) costs its
forward pass only. Embedding lookups, LayerNorm, softmax and GELU are left
out; they add a few percent.
"""

import dataclasses
from typing import Optional

from official_electra.modeling import objectives

# Two-Stage's stages cost as these objectives' steps.
_MASKED_LM = objectives.get("mlm")
_DETECTOR = objectives.get("electra")


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
    forward_per_example: forward-pass FLOPs of one sequence through what
      trains.
    frozen_forward_per_example: forward-pass FLOPs of what runs without
      training (no backward pass).
    train_per_example: `3 x forward_per_example + frozen_forward_per_example`.
  """
  forward_per_example: int
  frozen_forward_per_example: int = 0

  @property
  def train_per_example(self):
    return 3 * self.forward_per_example + self.frozen_forward_per_example


@dataclasses.dataclass(frozen=True)
class TrainFlopsSchedule:
  """Cumulative training FLOPs of a run whose step cost changes once
  (Two-Stage ELECTRA), or never (`switch_step` None).

  Attributes:
    first_per_step: FLOPs of a step before `switch_step`.
    later_per_step: FLOPs of a step from `switch_step` on.
    switch_step: the first step at the later cost, or None.
  """
  first_per_step: float
  later_per_step: Optional[float] = None
  switch_step: Optional[int] = None

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
                      seq_length, max_predictions_per_seq, stage=None):
  """Analytic FLOPs of one pretraining example.

  Args:
    discriminator_config: the main network's `EncoderConfig`.
    generator_config: the generator's `EncoderConfig`, or None (`mlm`, or a
      uniform generator).
    objective: an objective's name or `objectives.ObjectiveSpec`.
    seq_length: tokens per sequence.
    max_predictions_per_seq: masked slots per sequence.
    stage: `two_stage` only: 1 (a masked LM of the discriminator's size,
      as `mlm`) or 2 (the frozen generator's forward pass, and the
      discriminator trained as in `electra`).

  Returns:
    `PretrainingFlops`.
  """
  spec = objectives.get(objective)
  if spec.two_stage:
    # Stage 1 is a masked LM as `mlm`; stage 2 the frozen generator's forward
    # pass and the discriminator trained as in `electra`.
    if stage == 1:
      return pretraining_flops(discriminator_config, None, _MASKED_LM,
                               seq_length, max_predictions_per_seq)
    if stage != 2:
      raise ValueError(f"two_stage FLOPs need stage 1 or 2, got {stage!r}")
    with_generator = pretraining_flops(
        discriminator_config, generator_config, _DETECTOR, seq_length,
        max_predictions_per_seq)
    alone = pretraining_flops(discriminator_config, None, _DETECTOR,
                              seq_length, max_predictions_per_seq)
    return PretrainingFlops(
        forward_per_example=alone.forward_per_example,
        frozen_forward_per_example=(with_generator.forward_per_example
                                    - alone.forward_per_example))
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
  if spec.detects_replacements:
    flops += seq_length * (2 * hidden * hidden + 2 * hidden)
    if spec.reinforce:
      # The REINFORCE baseline's linear head at the masked slots.
      flops += max_predictions_per_seq * 2 * generator_config.hidden_size
  elif spec.main_task == objectives.PREDICTS_MASKED:
    flops += max_predictions_per_seq * mlm_head_flops_per_prediction(
        hidden, embedding, vocab_size)
  else:  # all_tokens_mlm: the MLM head and the copy head on every token.
    flops += seq_length * (
        mlm_head_flops_per_prediction(hidden, embedding, vocab_size)
        + 2 * hidden * hidden + 2 * hidden)
  return PretrainingFlops(forward_per_example=flops)


def train_flops_schedule(discriminator_config, generator_config, objective,
                         seq_length, max_predictions_per_seq, batch_size,
                         two_stage_generator_steps=None):
  """The `TrainFlopsSchedule` of a run (global batch of `batch_size`): one
  step cost, or Two-Stage's two, switching at `two_stage_generator_steps`."""
  def per_step(stage=None):
    return batch_size * pretraining_flops(
        discriminator_config, generator_config, objective, seq_length,
        max_predictions_per_seq, stage).train_per_example
  if not objectives.get(objective).two_stage:
    return TrainFlopsSchedule(per_step())
  return TrainFlopsSchedule(per_step(1), per_step(2),
                            two_stage_generator_steps)
