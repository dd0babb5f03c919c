"""The original ELECTRA/BERT AdamW: decoupled weight decay, no bias correction."""

import re

import tensorflow as tf
import tf_keras

DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ElectraAdamW(tf_keras.optimizers.Optimizer):
  """Adam with decoupled weight decay and WITHOUT bias correction.

  The update of the original `AdamWeightDecayOptimizer` (ELECTRA's
  model/optimization.py, from BERT):

      m = beta_1 * m + (1 - beta_1) * g
      v = beta_2 * v + (1 - beta_2) * g^2
      update = m / (sqrt(v) + epsilon) + weight_decay_rate * w   (decay only
               for variables whose name matches none of the exclusions)
      w -= lr * multiplier(w) * update

  There is no `1 - beta^t` correction: early steps are small, which the
  warm-up ramp compensates for. Gradient clipping is the caller's job (the
  pretrainer clips the global norm after summing over replicas).

  Args:
    learning_rate: A float or a `LearningRateSchedule`.
    weight_decay_rate: Decoupled weight decay (0.01 in ELECTRA).
    beta_1: First-moment decay.
    beta_2: Second-moment decay.
    epsilon: Added to `sqrt(v)` (1e-6 in ELECTRA).
    exclude_from_weight_decay: Regular expressions; a variable whose name
      contains a match gets no weight decay.
    learning_rate_multipliers: Optional callable `variable_name -> float`, a
      per-variable factor on the learning rate (layer-wise decay uses it).
    name: Optimizer name.
    **kwargs: Base optimizer arguments (`clipnorm` etc. are rejected).
  """

  def __init__(self,
               learning_rate,
               weight_decay_rate=0.01,
               beta_1=0.9,
               beta_2=0.999,
               epsilon=1e-6,
               exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
               learning_rate_multipliers=None,
               name="ElectraAdamW",
               **kwargs):
    for clip_arg in ("clipnorm", "clipvalue", "global_clipnorm"):
      if kwargs.get(clip_arg) is not None:
        raise ValueError(f"{clip_arg} is not supported: ElectraPretrainer "
                         "clips the global gradient norm itself")
    super().__init__(name=name, **kwargs)
    self._learning_rate = self._build_learning_rate(learning_rate)
    self.weight_decay_rate = weight_decay_rate
    self.beta_1 = beta_1
    self.beta_2 = beta_2
    self.epsilon = epsilon
    self.exclude_from_weight_decay = tuple(exclude_from_weight_decay or ())
    self.learning_rate_multipliers = learning_rate_multipliers

  def build(self, var_list):
    super().build(var_list)
    if getattr(self, "_built", False):
      return
    self._built = True
    self._momentums = []
    self._velocities = []
    self._decay_flags = {}
    self._multipliers = {}
    for variable in var_list:
      self._momentums.append(
          self.add_variable_from_reference(variable, "m"))
      self._velocities.append(
          self.add_variable_from_reference(variable, "v"))
      key = self._var_key(variable)
      self._decay_flags[key] = self.weight_decay_rate > 0 and not any(
          re.search(pattern, variable.name)
          for pattern in self.exclude_from_weight_decay)
      self._multipliers[key] = (
          float(self.learning_rate_multipliers(variable.name))
          if self.learning_rate_multipliers else 1.0)

  def update_step(self, gradient, variable):
    key = self._var_key(variable)
    index = self._index_dict[key]
    momentum = self._momentums[index]
    velocity = self._velocities[index]
    # Sparse (IndexedSlices) gradients are densified: without bias correction
    # the moments of every row decay at every step, as in the original.
    gradient = tf.convert_to_tensor(gradient)
    dtype = variable.dtype
    learning_rate = tf.cast(self.learning_rate, dtype) * self._multipliers[key]
    momentum.assign(self.beta_1 * momentum + (1.0 - self.beta_1) * gradient)
    velocity.assign(self.beta_2 * velocity +
                    (1.0 - self.beta_2) * tf.square(gradient))
    update = momentum / (tf.sqrt(velocity) + self.epsilon)
    if self._decay_flags[key]:
      update += self.weight_decay_rate * variable
    variable.assign_sub(learning_rate * update)

  def get_config(self):
    config = super().get_config()
    config.update({
        "learning_rate": self._serialize_hyperparameter(self._learning_rate),
        "weight_decay_rate": self.weight_decay_rate,
        "beta_1": self.beta_1,
        "beta_2": self.beta_2,
        "epsilon": self.epsilon,
        "exclude_from_weight_decay": list(self.exclude_from_weight_decay),
    })
    return config
