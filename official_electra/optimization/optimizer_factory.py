"""Builds the pretraining optimizer by name: the original AdamW, or LAMB."""

from official.modeling.optimization import lamb

from official_electra.optimization import adamw
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
