"""ELECTRA's learning-rate schedule: linear decay times a linear warm-up ramp."""

import tensorflow as tf
import tf_keras


@tf_keras.utils.register_keras_serializable(package="official_electra")
class WarmupLinearDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """`peak * (1 - min(step, T) / T) ** power * min(1, step / warmup)`.

  As the original (model/optimization.py): the polynomial (linear) decay to 0
  over `num_train_steps` is multiplied by a warm-up ramp; the ramp does not
  replace the decay, so the rate at the end of warm-up is already slightly
  below the peak.

  Args:
    peak_learning_rate: The learning rate before decay.
    num_train_steps: Steps `T` of the decay to zero.
    num_warmup_steps: Length of the ramp (0 for none).
    decay_power: Exponent of the decay (1.0 is linear).
  """

  def __init__(self, peak_learning_rate, num_train_steps, num_warmup_steps,
               decay_power=1.0):
    super().__init__()
    if num_train_steps < 1:
      raise ValueError(f"num_train_steps must be positive, got {num_train_steps}")
    if num_warmup_steps < 0:
      raise ValueError(
          f"num_warmup_steps must be >= 0, got {num_warmup_steps}")
    self.peak_learning_rate = peak_learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.decay_power = decay_power

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    progress = tf.minimum(step, float(self.num_train_steps)) / float(
        self.num_train_steps)
    learning_rate = self.peak_learning_rate * tf.pow(1.0 - progress,
                                                     self.decay_power)
    if self.num_warmup_steps > 0:
      learning_rate *= tf.minimum(1.0, step / float(self.num_warmup_steps))
    return learning_rate

  def get_config(self):
    return {
        "peak_learning_rate": self.peak_learning_rate,
        "num_train_steps": self.num_train_steps,
        "num_warmup_steps": self.num_warmup_steps,
        "decay_power": self.decay_power,
    }


@tf_keras.utils.register_keras_serializable(package="official_electra")
class RestartedWarmupLinearDecay(tf_keras.optimizers.schedules.LearningRateSchedule):
  """`WarmupLinearDecay` run twice: over `[0, restart_step)`, then again
  from `restart_step` to `num_train_steps`, each with its own warm-up.

  For Two-Stage ELECTRA, whose two stages train different objectives as two
  runs would (Clark et al., 2020, Section 3.3: "train only the generator
  ... for n steps", then "train the discriminator ... for n steps").

  Args:
    peak_learning_rate: The learning rate before decay, in both parts.
    num_train_steps: The end of the second decay.
    num_warmup_steps: Length of each part's ramp.
    restart_step: Where the second part starts (in `[1, num_train_steps)`).
    decay_power: Exponent of the decays.
  """

  def __init__(self, peak_learning_rate, num_train_steps, num_warmup_steps,
               restart_step, decay_power=1.0):
    super().__init__()
    if not 0 < restart_step < num_train_steps:
      raise ValueError(f"restart_step must lie in [1, {num_train_steps}), got "
                       f"{restart_step}")
    self.peak_learning_rate = peak_learning_rate
    self.num_train_steps = num_train_steps
    self.num_warmup_steps = num_warmup_steps
    self.restart_step = restart_step
    self.decay_power = decay_power
    self._first = WarmupLinearDecay(peak_learning_rate, restart_step,
                                    num_warmup_steps, decay_power)
    self._second = WarmupLinearDecay(peak_learning_rate,
                                     num_train_steps - restart_step,
                                     num_warmup_steps, decay_power)

  def __call__(self, step):
    step = tf.cast(step, tf.float32)
    restart = float(self.restart_step)
    return tf.where(step < restart, self._first(step),
                    self._second(tf.maximum(step - restart, 0.0)))

  def get_config(self):
    return {
        "peak_learning_rate": self.peak_learning_rate,
        "num_train_steps": self.num_train_steps,
        "num_warmup_steps": self.num_warmup_steps,
        "restart_step": self.restart_step,
        "decay_power": self.decay_power,
    }
