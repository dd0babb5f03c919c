"""Builds the optimizers: pretraining's by name (the original AdamW, or LAMB),
and fine-tuning's (AdamW with layer-wise learning-rate decay)."""

from official.modeling.optimization import lamb

from official_electra.optimization import adamw
from official_electra.optimization import layerwise_decay
from official_electra.optimization import schedules

OPTIMIZERS = ("adamw", "lamb")


def create_optimizer(name="adamw",
                     peak_learning_rate=5e-4,
                     num_train_steps=1_000_000,
                     num_warmup_steps=10_000,
                     weight_decay_rate=0.01,
                     beta_1=0.9,
                     beta_2=0.999,
                     epsilon=1e-6,
                     decay_power=1.0,
                     learning_rate_multipliers=None,
                     restart_step=None):
  """The optimizer with ELECTRA's warm-up x linear-decay schedule.

  Args:
    name: `adamw` (the original's, no bias correction; the default) or `lamb`
      (Model Garden's LAMB, for very large batches; You et al., 2020).
    peak_learning_rate: Learning rate before decay.
    num_train_steps: Steps of the linear decay to zero.
    num_warmup_steps: Steps of the warm-up ramp.
    weight_decay_rate: Decoupled weight decay, not on LayerNorm or biases.
    beta_1: First-moment decay.
    beta_2: Second-moment decay.
    epsilon: Adam epsilon.
    decay_power: Exponent of the decay.
    learning_rate_multipliers: Optional `variable_name -> float` (AdamW only).
    restart_step: Optional step where the warm-up and decay start again
      (Two-Stage ELECTRA's second stage; `RestartedWarmupLinearDecay`).

  Returns:
    A `tf_keras` optimizer.
  """
  if restart_step is None:
    schedule = schedules.WarmupLinearDecay(
        peak_learning_rate, num_train_steps, num_warmup_steps, decay_power)
  else:
    schedule = schedules.RestartedWarmupLinearDecay(
        peak_learning_rate, num_train_steps, num_warmup_steps, restart_step,
        decay_power)
  if name == "adamw":
    return adamw.ElectraAdamW(
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        learning_rate_multipliers=learning_rate_multipliers)
  if name == "lamb":
    if learning_rate_multipliers is not None:
      raise ValueError("learning_rate_multipliers are supported with adamw only")
    return lamb.LAMB(
        learning_rate=schedule,
        weight_decay_rate=weight_decay_rate,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        exclude_from_weight_decay=list(
            adamw.DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY))
  raise ValueError(f"unknown optimizer {name!r}; choose one of {OPTIMIZERS}")


def create_finetuning_optimizer(num_layers,
                                peak_learning_rate,
                                num_train_steps,
                                warmup_proportion=0.1,
                                weight_decay_rate=0.01,
                                layerwise_decay_rate=0.8,
                                layerwise_decay_rule="paper"):
  """The fine-tuning optimizer of the recipe (Clark et al., 2020, Appendix A).

  The original AdamW (no bias correction, eps 1e-6, no decay on LayerNorm and
  biases), linear warm-up over the first `warmup_proportion` of the steps
  then linear decay to 0, and layer-wise learning-rate decay
  (`layerwise_decay.py`).

  Args:
    num_layers: Transformer blocks of the encoder being fine-tuned.
    peak_learning_rate: The task head's learning rate after warm-up.
    num_train_steps: Optimizer steps of the whole fine-tuning.
    warmup_proportion: Fraction of the steps spent warming up.
    weight_decay_rate: Decoupled weight decay.
    layerwise_decay_rate: Factor per level of depth (0.8 Small and Base,
      0.9 Large; 1.0 turns it off).
    layerwise_decay_rule: `paper` or `original_code` (see
      `layerwise_decay.py`).

  Returns:
    An `ElectraAdamW`.
  """
  return create_optimizer(
      "adamw",
      peak_learning_rate=peak_learning_rate,
      num_train_steps=num_train_steps,
      num_warmup_steps=int(warmup_proportion * num_train_steps),
      weight_decay_rate=weight_decay_rate,
      learning_rate_multipliers=layerwise_decay
      .layerwise_learning_rate_multipliers(
          num_layers=num_layers, decay_rate=layerwise_decay_rate,
          rule=layerwise_decay_rule))
