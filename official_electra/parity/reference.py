"""An independent PyTorch implementation of ELECTRA's pretraining procedure.

Written from the paper (Clark et al., 2020, Section 2 and Appendix A) and the
authors' TF1 code (`pretrain/pretrain_helpers.py`, `run_pretraining.py`,
`model/optimization.py`; `ELECTRA_REFERENCE.md` lists what they do), on
Hugging Face's `ElectraForPreTraining` and `ElectraForMaskedLM` as the
networks. It shares no code with `official_electra.modeling`: it is the other
side of the parity checks (`official_electra.parity`), so that our
pretraining can be shown to behave step for step like the authors'.

One step, objective `electra`:
  1. masking: `clamp(round(real_tokens * mask_prob), 1, N)` of the real tokens
     that are not special (`[CLS] [SEP] [MASK] [PAD]`) are chosen; 85% of them
     become `[MASK]` (`u < 0.85`), the rest keep their token;
  2. the generator's logits at the chosen positions; replacements sampled by
     Gumbel-max, `argmax(logits / T - log(-log U))`, with no gradient;
  3. the discriminator labels every real token: 1 where the corrupted token
     differs from the original;
  4. loss = `generator_weight` x MLM cross-entropy (mean over the masked
     slots) + `discriminator_weight` x sigmoid cross-entropy (mean over the
     real tokens), each denominator + 1e-6 as the authors';
  5. the gradient's global norm clipped at 1.0; AdamW without bias
     correction, decoupled weight decay on every parameter whose name
     contains none of `LayerNorm`, `layer_norm`, `bias`; learning rate
     `peak x (1 - step / T) x min(1, step / warmup)`.
Objective `mlm` (the BERT baseline) trains one `ElectraForMaskedLM` on the
same masking with the MLM loss alone.

The generator shares the discriminator's whole embedding block (word,
position and token-type embeddings and their LayerNorm; the generator's
output projection is tied to the word embeddings), as the authors'
`tie_embeddings`.

Every random draw is a tensor the caller may pass (`Noise`), so that a test
can feed both implementations the same noise; otherwise it is drawn from a
`torch.Generator`.
"""

import dataclasses
import math
from typing import Optional, Sequence

import torch

# Where the authors' masking sends a chosen position to `[MASK]`
# (pretrain_helpers.py, `mask`: `tf.random.uniform([B, N]) < 0.85`).
MASK_FRACTION = 0.85
# The authors' AdamW leaves these out of weight decay (run_pretraining.py).
EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")
OBJECTIVES = ("electra", "mlm")
DRAWS = ("without_replacement", "with_replacement")


@dataclasses.dataclass
class Noise:
  """The random draws of one step (each float32, uniform).

  Attributes:
    position: `[B, S]` keys (`without_replacement`: the positions with the
      largest keys among the candidates are chosen) or `[B, N]` uniforms in
      [0, 1) (`with_replacement`: slot k takes the `floor(u * C)`-th
      candidate in position order, `C` candidates).
    mask: `[B, N]` in [0, 1): a chosen slot becomes `[MASK]` where
      `mask < 0.85`.
    sampling: `[B, N, V]` in (0, 1): the Gumbel-max uniforms.
  """
  position: torch.Tensor
  mask: torch.Tensor
  sampling: Optional[torch.Tensor] = None


@dataclasses.dataclass(frozen=True)
class Settings:
  """What one step does besides the weights (the authors' names in
  brackets).

  Attributes:
    objective: `electra` or `mlm`.
    mask_token_id: id of `[MASK]`.
    never_masked_ids: ids never chosen (`[PAD] [CLS] [SEP] [MASK]`).
    max_predictions_per_seq: N, masked slots per sequence.
    mask_prob: fraction of the real tokens masked [mask_prob].
    generator_weight: weight of the MLM loss [gen_weight].
    discriminator_weight: weight of the RTD loss [disc_weight].
    temperature: sampling temperature [temperature].
    draws: `without_replacement` (distinct positions) or
      `with_replacement` (the authors' independent draws).
  """
  objective: str
  mask_token_id: int
  never_masked_ids: Sequence[int]
  max_predictions_per_seq: int
  mask_prob: float = 0.15
  generator_weight: float = 1.0
  discriminator_weight: float = 50.0
  temperature: float = 1.0
  draws: str = "without_replacement"

  def __post_init__(self):
    if self.objective not in OBJECTIVES:
      raise ValueError(f"objective {self.objective!r}: the reference "
                       f"implements {OBJECTIVES}")
    if self.draws not in DRAWS:
      raise ValueError(f"draws {self.draws!r}: choose one of {DRAWS}")


def draw_noise(settings, batch_size, seq_len, vocab_size, generator):
  """Fresh `Noise` for one step from the `torch.Generator` `generator`."""
  slots = settings.max_predictions_per_seq
  position_shape = ((batch_size, seq_len)
                    if settings.draws == "without_replacement"
                    else (batch_size, slots))
  sampling = None
  if settings.objective == "electra":
    # torch.rand is in [0, 1): 0 is nudged to the smallest normal float so
    # that -log(-log u) is finite.
    sampling = torch.rand((batch_size, slots, vocab_size),
                          generator=generator).clamp_min(
                              torch.finfo(torch.float32).tiny)
  return Noise(torch.rand(position_shape, generator=generator),
               torch.rand((batch_size, slots), generator=generator), sampling)


def mask_batch(settings, input_ids, input_mask, noise):
  """The authors' masking of a batch.

  Returns:
    dict of `masked_input_ids` `[B, S]`, `positions` `[B, N]` (0 in unused
    slots), `masked_ids` `[B, N]` and float `weights` `[B, N]`.
  """
  slots = settings.max_predictions_per_seq
  batch_size, seq_len = input_ids.shape
  real = input_mask.bool()
  candidates = real.clone()
  for token_id in settings.never_masked_ids:
    candidates &= input_ids != token_id
  candidates &= input_ids != settings.mask_token_id
  num_real = real.sum(-1).float()
  budget = torch.clamp(torch.round(num_real * settings.mask_prob).long(), 1,
                       slots)
  slot_index = torch.arange(slots)[None, :]
  if settings.draws == "without_replacement":
    keys = torch.where(candidates, noise.position, torch.full_like(
        noise.position, -1.0))
    if seq_len < slots:
      keys = torch.cat([keys, torch.full((batch_size, slots - seq_len), -1.0)],
                       dim=1)
    top_keys, positions = torch.topk(keys, slots, dim=-1, sorted=True)
    drawn = top_keys >= 0
  else:
    num_candidates = candidates.sum(-1, keepdim=True)
    # Candidate positions in increasing order, the others after them.
    order = torch.argsort((~candidates).int(), dim=-1, stable=True)
    index = torch.floor(noise.position * num_candidates.float()).long()
    index = torch.minimum(index, (num_candidates - 1).clamp_min(0))
    positions = torch.gather(order, 1, index)
    drawn = (num_candidates > 0).expand(-1, slots)
  used = drawn & (slot_index < budget[:, None])
  positions = torch.where(used, positions, torch.zeros_like(positions))
  to_mask = used & (noise.mask < MASK_FRACTION)
  masked_input_ids = scatter(input_ids, positions,
                             torch.full_like(positions, settings.mask_token_id),
                             to_mask)
  return {"masked_input_ids": masked_input_ids, "positions": positions,
          "masked_ids": torch.gather(input_ids, 1, positions),
          "weights": used.float()}


def scatter(sequence, positions, values, written):
  """`sequence` with `values` written at `positions` where `written`; a
  position written by several slots takes their mean, rounded down (the
  authors' `scatter_update`)."""
  sums = torch.zeros_like(sequence).scatter_add(
      1, positions, torch.where(written, values, torch.zeros_like(values)))
  counts = torch.zeros_like(sequence).scatter_add(1, positions,
                                                  written.long())
  return torch.where(counts > 0,
                     torch.div(sums, counts.clamp_min(1),
                               rounding_mode="floor"), sequence)


def gumbel_max(logits, temperature, uniforms):
  """One sample per slot of `softmax(logits / temperature)`."""
  scores = logits.detach().float() / temperature - torch.log(
      -torch.log(uniforms))
  return scores.argmax(-1)


def _weighted_mean(per_item, weights):
  return (per_item * weights).sum() / (weights.sum() + 1e-6)


def tie_embeddings(discriminator, generator):
  """Makes the generator use the discriminator's embedding block and ties its
  output projection to the word embeddings."""
  generator.electra.embeddings = discriminator.electra.embeddings
  generator.generator_lm_head.weight = (
      discriminator.electra.embeddings.word_embeddings.weight)


class ReferencePretraining(torch.nn.Module):
  """The networks and one step's forward pass and losses.

  Args:
    settings: `Settings`.
    main: the network kept after pretraining: `ElectraForPreTraining`
      (`electra`) or `ElectraForMaskedLM` (`mlm`).
    generator: `ElectraForMaskedLM` (`electra` only); its embeddings are
      tied to `main`'s here.
  """

  def __init__(self, settings, main, generator=None):
    super().__init__()
    if (generator is None) != (settings.objective == "mlm"):
      raise ValueError("a generator is needed by, and only by, `electra`")
    self.settings = settings
    self.main = main
    self.generator = generator
    if generator is not None:
      tie_embeddings(main, generator)

  def forward(self, batch, noise):
    """Losses and what the metrics need.

    Args:
      batch: dict of int64 `input_ids`, `input_mask`, `token_type_ids`
        `[B, S]`.
      noise: `Noise`.

    Returns:
      dict: `loss` (the weighted total), `mlm_loss`, and for `electra`
      `rtd_loss`, plus the masking outputs, `mlm_logits` `[B, N, V]`, and
      for `electra` `sampled_ids`, `corrupted_ids`, `labels` and
      `rtd_logits` `[B, S]`.
    """
    settings = self.settings
    input_ids, input_mask = batch["input_ids"], batch["input_mask"]
    masked = mask_batch(settings, input_ids, input_mask, noise)
    mlm_network = self.generator if self.generator is not None else self.main
    hidden = mlm_network.electra(input_ids=masked["masked_input_ids"],
                                 attention_mask=input_mask,
                                 token_type_ids=batch["token_type_ids"])[0]
    # The head runs at the masked slots only, as the authors'
    # `get_masked_lm_output` (gather, then project to the vocabulary).
    hidden = torch.gather(hidden, 1, masked["positions"][:, :, None].expand(
        -1, -1, hidden.shape[-1]))
    slot_logits = mlm_network.generator_lm_head(
        mlm_network.generator_predictions(hidden))
    per_slot = torch.nn.functional.cross_entropy(
        slot_logits.transpose(1, 2).float(), masked["masked_ids"],
        reduction="none")
    outputs = dict(masked, mlm_logits=slot_logits)
    outputs["mlm_loss"] = _weighted_mean(per_slot, masked["weights"])
    if settings.objective == "mlm":
      outputs["loss"] = outputs["mlm_loss"]
      return outputs
    sampled = gumbel_max(slot_logits, settings.temperature, noise.sampling)
    corrupted = scatter(masked["masked_input_ids"], masked["positions"],
                        sampled, masked["weights"] > 0)
    labels = ((corrupted != input_ids) & input_mask.bool()).float()
    rtd_logits = self.main(input_ids=corrupted, attention_mask=input_mask,
                           token_type_ids=batch["token_type_ids"]).logits
    per_token = torch.nn.functional.binary_cross_entropy_with_logits(
        rtd_logits.float(), labels, reduction="none")
    outputs.update(sampled_ids=sampled, corrupted_ids=corrupted,
                   labels=labels, rtd_logits=rtd_logits)
    outputs["rtd_loss"] = _weighted_mean(per_token, input_mask.float())
    outputs["loss"] = (settings.generator_weight * outputs["mlm_loss"]
                       + settings.discriminator_weight * outputs["rtd_loss"])
    return outputs


def learning_rate(step, peak, num_train_steps, num_warmup_steps):
  """The authors' schedule at `step` (0 for the first update): linear decay
  to 0 at `num_train_steps`, times the warm-up ramp."""
  decayed = peak * (1.0 - min(step, num_train_steps) / num_train_steps)
  if num_warmup_steps:
    decayed *= min(1.0, step / num_warmup_steps)
  return decayed


class ReferenceAdamW:
  """The authors' `AdamWeightDecayOptimizer` (BERT's): Adam without bias
  correction and with decoupled weight decay, after the gradient's global
  norm is clipped at `clip_norm`.

  Args:
    named_parameters: `(name, parameter)` pairs; a parameter shared by two
      modules (the tied embeddings) is updated once.
    peak_learning_rate, num_train_steps, num_warmup_steps: the schedule
      (`learning_rate`).
    weight_decay_rate, beta_1, beta_2, epsilon: as the authors' (0.01, 0.9,
      0.999, 1e-6).
    exclude_from_weight_decay: name fragments that turn weight decay off.
    clip_norm: the global-norm bound (1.0).
  """

  def __init__(self, named_parameters, peak_learning_rate, num_train_steps,
               num_warmup_steps, weight_decay_rate=0.01, beta_1=0.9,
               beta_2=0.999, epsilon=1e-6,
               exclude_from_weight_decay=EXCLUDE_FROM_WEIGHT_DECAY,
               clip_norm=1.0):
    self.parameters = {}
    for name, parameter in named_parameters:
      if all(parameter is not seen for seen in self.parameters.values()):
        self.parameters[name] = parameter
    self.peak_learning_rate = peak_learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.weight_decay_rate = weight_decay_rate
    self.beta_1, self.beta_2, self.epsilon = beta_1, beta_2, epsilon
    self.exclude_from_weight_decay = tuple(exclude_from_weight_decay)
    self.clip_norm = clip_norm
    self.step_count = 0
    self.state = {name: (torch.zeros_like(p), torch.zeros_like(p))
                  for name, p in self.parameters.items()}

  def decays(self, name):
    return self.weight_decay_rate > 0 and not any(
        fragment in name for fragment in self.exclude_from_weight_decay)

  def clipped_gradients(self):
    """`{name: gradient}` after the global-norm clip (`tf.clip_by_global_norm`:
    scaled by `clip / max(norm, clip)`)."""
    gradients = {name: (p.grad if p.grad is not None else torch.zeros_like(p))
                 for name, p in self.parameters.items()}
    norm = math.sqrt(sum(float((g.double() ** 2).sum())
                         for g in gradients.values()))
    scale = self.clip_norm / max(norm, self.clip_norm)
    return {name: g * scale for name, g in gradients.items()}

  @torch.no_grad()
  def step(self):
    """One update from the parameters' `.grad`; returns the learning rate."""
    rate = learning_rate(self.step_count, self.peak_learning_rate,
                         self.num_train_steps, self.num_warmup_steps)
    for name, gradient in self.clipped_gradients().items():
      parameter = self.parameters[name]
      m, v = self.state[name]
      m.mul_(self.beta_1).add_(gradient, alpha=1.0 - self.beta_1)
      v.mul_(self.beta_2).add_(gradient * gradient, alpha=1.0 - self.beta_2)
      update = m / (v.sqrt() + self.epsilon)
      if self.decays(name):
        update = update + self.weight_decay_rate * parameter
      parameter.sub_(rate * self.multiplier(name) * update)
    self.step_count += 1
    return rate

  def multiplier(self, name):
    """The factor on the learning rate of parameter `name` (1: pretraining
    has no layer-wise decay)."""
    del name
    return 1.0

  def zero_grad(self):
    for parameter in self.parameters.values():
      parameter.grad = None
