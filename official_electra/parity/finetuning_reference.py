"""An independent PyTorch implementation of ELECTRA's GLUE fine-tuning step.

Written from the paper (Clark et al., 2020, Section 4 and Appendix A) and the
authors' TF1 code (`finetune/classification/classification_tasks.py`,
`run_finetuning.py`, `model/optimization.py`; `ELECTRA_REFERENCE.md`
Section 4), on Hugging Face's `ElectraModel` as the encoder. It shares no
code with `official_electra.modeling`, `official_electra.optimization` or
`official_electra.finetuning`: it is the other side of the fine-tuning
parity checks, so that our GLUE step can be shown to be the authors'.

One step:
  1. the head: dropout on the final hidden state of the first token
     (`[CLS]`), then one dense layer (Glorot-uniform kernel, zero bias, as
     `tf.layers.dense`); no pooler. This is the authors' head, NOT Hugging
     Face's `ElectraClassificationHead`, which puts a dense + GELU layer
     (and a second dropout) before the output layer;
  2. the per-example loss: softmax cross-entropy (classification) or the
     squared error of the one output (regression; the authors train STS-B
     on `(score - 0) / 5`, `training_targets`);
  3. the batch's loss: their sum (`sum`, the authors' `run_finetuning.py`)
     or their mean (`mean`);
  4. the gradient's global norm clipped at 1.0; AdamW without bias
     correction, decoupled weight decay 0.01 on every parameter whose name
     contains none of `LayerNorm`, `layer_norm`, `bias`
     (`reference.ReferenceAdamW`), each parameter's learning rate scaled by
     its layer-wise decay (`learning_rate_multiplier`);
  5. the learning rate `peak x (1 - step / T) x min(1, step / W)`, `W =
     warmup_proportion x T` as a float, as the authors' `create_optimizer`
     computes it (`max(T * warmup_proportion, 0)`, no rounding).
"""

import dataclasses
import re

import torch

from official_electra.parity import reference

LOSS_REDUCTIONS = ("sum", "mean")
LAYERWISE_DECAY_RULES = ("paper", "original_code")

_BLOCK = re.compile(r"(?:^|\.)encoder\.layer\.(\d+)\.")
_EMBEDDINGS = re.compile(r"(?:^|\.)embeddings(?:_project)?\.")


@dataclasses.dataclass(frozen=True)
class Settings:
  """What a fine-tuning run does besides the weights and the data (the
  authors' names in brackets; defaults are their code's for ELECTRA-Small).

  Attributes:
    num_outputs: classes, or 1 for a regression.
    peak_learning_rate: [learning_rate].
    loss_reduction: `sum` (the authors' code) or `mean` of the per-example
      losses over the batch.
    layerwise_decay_rate: [layerwise_lr_decay].
    layerwise_decay_rule: `original_code` (the authors' `_get_layer_lrs`: the
      top block at `decay**2`) or `paper` (Appendix A: the top block at
      `decay`).
    warmup_proportion: [warmup_proportion].
    weight_decay_rate: [weight_decay_rate].
    dropout_rate: dropout on the `[CLS]` vector (`keep_prob=0.9`).
    regression_divisor: a regression's targets are its scores divided by
      this (the authors': the task's maximum score, 5 for STS-B; 1 trains on
      the raw scores).
    clip_norm: the gradient's global-norm bound.
  """
  num_outputs: int
  peak_learning_rate: float = 1e-4
  loss_reduction: str = "sum"
  layerwise_decay_rate: float = 0.8
  layerwise_decay_rule: str = "original_code"
  warmup_proportion: float = 0.1
  weight_decay_rate: float = 0.01
  dropout_rate: float = 0.1
  regression_divisor: float = 5.0
  clip_norm: float = 1.0

  def __post_init__(self):
    if self.loss_reduction not in LOSS_REDUCTIONS:
      raise ValueError(f"loss_reduction {self.loss_reduction!r}: choose one "
                       f"of {LOSS_REDUCTIONS}")
    if self.layerwise_decay_rule not in LAYERWISE_DECAY_RULES:
      raise ValueError(f"layerwise_decay_rule {self.layerwise_decay_rule!r}: "
                       f"choose one of {LAYERWISE_DECAY_RULES}")

  @property
  def is_regression(self):
    return self.num_outputs == 1


class ReferenceClassifier(torch.nn.Module):
  """The authors' GLUE model: an encoder, dropout on its first token's final
  hidden state, one linear layer.

  Args:
    encoder: a `transformers.ElectraModel`.
    num_outputs: classes, or 1 for a regression.
    dropout_rate: dropout on the `[CLS]` vector.
  """

  def __init__(self, encoder, num_outputs, dropout_rate):
    super().__init__()
    self.electra = encoder
    self.dropout = torch.nn.Dropout(dropout_rate)
    self.classifier = torch.nn.Linear(encoder.config.hidden_size, num_outputs)
    # tf.layers.dense's defaults: Glorot-uniform kernel, zero bias.
    torch.nn.init.xavier_uniform_(self.classifier.weight)
    torch.nn.init.zeros_(self.classifier.bias)

  def forward(self, input_ids, input_mask, token_type_ids):
    """Float32 logits (or scores) `[batch, num_outputs]` of int64
    `[batch, seq_len]` inputs."""
    hidden = self.electra(input_ids=input_ids, attention_mask=input_mask,
                          token_type_ids=token_type_ids)[0]
    return self.classifier(self.dropout(hidden[:, 0])).float()


def training_targets(settings, labels):
  """What the loss compares the outputs with: class ids as given, a
  regression's scores divided by `settings.regression_divisor`."""
  if settings.is_regression:
    return labels.float() / settings.regression_divisor
  return labels.long()


def loss(settings, outputs, targets):
  """The batch's loss: per-example cross-entropy (squared error for a
  regression) of `outputs` `[B, num_outputs]`, summed or averaged over the
  batch."""
  if settings.is_regression:
    per_example = (outputs[:, 0] - targets) ** 2
  else:
    per_example = -torch.log_softmax(outputs, dim=-1).gather(
        1, targets[:, None])[:, 0]
  if settings.loss_reduction == "sum":
    return per_example.sum()
  return per_example.mean()


def layer_depth(name, num_layers, rule):
  """A parameter's depth from the top, the exponent of its layer-wise decay.

  The head is at depth 0. Under `paper` the top block (`encoder.layer.{L-1}`)
  is at 1, block i at `L - i`, the embedding block and its projection at
  `L + 1`. Under `original_code` every encoder parameter is one deeper (the
  authors' `_get_layer_lrs` counts the embeddings as depth 0 and the head
  as `L + 2`, and scales by `decay ** (L + 2 - depth)`).
  """
  offset = 1 if rule == "original_code" else 0
  block = _BLOCK.search(name)
  if block:
    index = int(block.group(1))
    if index >= num_layers:
      raise ValueError(f"{name}: block {index} of an encoder of {num_layers}")
    return num_layers - index + offset
  if _EMBEDDINGS.search(name):
    return num_layers + 1 + offset
  return 0


def learning_rate_multiplier(name, num_layers, decay_rate, rule):
  """`decay_rate ** layer_depth(name, ...)`."""
  return decay_rate ** layer_depth(name, num_layers, rule)


class FinetuningAdamW(reference.ReferenceAdamW):
  """The authors' fine-tuning optimizer: `reference.ReferenceAdamW` (no bias
  correction, decoupled weight decay, global-norm clip) with each
  parameter's learning rate scaled by its layer-wise decay, and the warm-up
  over `warmup_proportion` of the steps.

  Args:
    model: a `ReferenceClassifier`.
    settings: `Settings`.
    num_train_steps: T, the steps of the linear decay to 0.
    num_layers: the encoder's Transformer blocks.
  """

  def __init__(self, model, settings, num_train_steps, num_layers):
    self.model = model
    super().__init__(model.named_parameters(), settings.peak_learning_rate,
                     num_train_steps,
                     num_train_steps * settings.warmup_proportion,
                     weight_decay_rate=settings.weight_decay_rate,
                     clip_norm=settings.clip_norm)
    self.multipliers = {
        name: learning_rate_multiplier(name, num_layers,
                                       settings.layerwise_decay_rate,
                                       settings.layerwise_decay_rule)
        for name in self.parameters}

  def multiplier(self, name):
    return self.multipliers[name]


def train_step(model, optimizer, settings, batch, labels):
  """One fine-tuning step of `model` (in training mode) on `batch` (int64
  `input_ids`, `input_mask`, `token_type_ids` `[B, S]`) and its `labels`
  `[B]` (class ids, or a regression's scores).

  Returns:
    `(loss at the weights before the update, the head's learning rate of
    the update)`.
  """
  optimizer.zero_grad()
  outputs = model(batch["input_ids"], batch["input_mask"],
                  batch["token_type_ids"])
  batch_loss = loss(settings, outputs, training_targets(settings, labels))
  batch_loss.backward()
  rate = optimizer.step()
  return float(batch_loss.detach()), rate
