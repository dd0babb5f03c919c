"""Periodic training checkpoints and SIGTERM (preemption) handling for one seed.

A fine-tuning run saves `<run_dir>/train_checkpoints/ckpt-<step>` every
`save_every_steps` optimizer steps and when training ends, keeping the last
`max_to_keep`. A checkpoint holds the classifier, the optimizer (its step
counter, which also drives the learning-rate schedule, and its moments) and the
dropout layers' random generators. The data order is a function of the seed
and the epoch (`inputs.make_training_dataset`), so the step alone says where to
continue and a resumed run computes what an uninterrupted one computes.

Atomicity: `tf.train.CheckpointManager` writes a checkpoint's data files, then
its index, then rewrites the `checkpoint` state file through a rename, and only
then deletes checkpoints beyond `max_to_keep`. A kill during a save leaves the
state file naming the previous checkpoint, which is complete; the orphaned
files of the unfinished one are ignored.

On SIGTERM the handler (`preemption.SigtermFlag`) only sets a flag; at the end
of the running training step a checkpoint is written and `preemption.Preempted`
is raised, as in pretraining.
"""

import tensorflow as tf
import tf_keras

from official_electra import errors
from official_electra import preemption
from official_electra.modeling import checkpoints


class EpochProgress(tf_keras.callbacks.ProgbarLogger):
  """Keras' progress bar, numbering epochs out of `num_epochs` when each epoch
  is its own `fit` call (`Epoch 3/4`, not `Epoch 3/3`)."""

  def __init__(self, num_epochs):
    super().__init__(count_mode="steps")
    self._num_epochs = num_epochs

  def set_params(self, params):
    super().set_params(dict(params, epochs=self._num_epochs))


class TrainingCheckpoints:
  """The training checkpoints of one compiled classifier in `directory`.

  Args:
    model: a compiled `tf_keras.Model`; its optimizer's variables are created
      here so that a restore fills them.
    directory: where `ckpt-<step>` files and the `checkpoint` state file live.
    save_every_steps: periodic cadence in optimizer steps.
    max_to_keep: how many of the latest checkpoints to keep.
  """

  def __init__(self, model, directory, save_every_steps, max_to_keep):
    if save_every_steps < 1 or max_to_keep < 1:
      raise ValueError("save_every_steps and max_to_keep must be positive, got "
                       f"{save_every_steps} and {max_to_keep}")
    self.save_every_steps = save_every_steps
    self._optimizer = model.optimizer
    self._optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(
        model=model, optimizer=self._optimizer,
        dropout_random_state=checkpoints.dropout_random_state(model))
    self._manager = tf.train.CheckpointManager(checkpoint, directory,
                                               max_to_keep=max_to_keep)

  @property
  def step(self) -> int:
    """Optimizer steps taken so far."""
    return int(self._optimizer.iterations.numpy())

  @property
  def latest(self):
    """The prefix of the latest complete checkpoint, or None."""
    return self._manager.latest_checkpoint

  def restore_latest(self) -> int:
    """Restores the latest checkpoint, if any; returns the step it holds (or 0)."""
    prefix = self._manager.latest_checkpoint
    if prefix:
      try:
        self._manager.checkpoint.restore(prefix).assert_existing_objects_matched()
      except (AssertionError, ValueError, tf.errors.OpError) as error:
        raise checkpoints.CheckpointError(
            f"{prefix}: cannot resume from this training checkpoint "
            f"({errors.first_line(error)}); it was written with another "
            f"configuration: delete {self._manager.directory} to restart this "
            "seed, or use a new --model_dir") from None
    return self.step

  def save(self) -> str:
    """Saves the current state unless it is already the latest; its prefix."""
    latest = self._manager.latest_checkpoint
    if latest and latest.endswith(f"-{self.step}"):
      return latest
    return self._manager.save(checkpoint_number=self.step)


class CheckpointCallback(tf_keras.callbacks.Callback):
  """Saves every `save_every_steps`; on SIGTERM saves and raises `Preempted`.

  Args:
    checkpoints: the run's `TrainingCheckpoints`.
    sigterm: the `preemption.SigtermFlag` active around training.
    run_name: names the run in the preemption message (e.g. `SST-2 seed 0`).
    total_steps: the run's number of optimizer steps, for the message.
  """

  def __init__(self, checkpoints, sigterm, run_name, total_steps):
    super().__init__()
    self._checkpoints = checkpoints
    self._sigterm = sigterm
    self._run_name = run_name
    self._total_steps = total_steps

  def on_train_batch_end(self, batch, logs=None):
    step = self._checkpoints.step
    if self._sigterm.received:
      self.raise_preempted()
    if step % self._checkpoints.save_every_steps == 0:
      self._checkpoints.save()

  def raise_preempted(self):
    """Saves a checkpoint and raises `preemption.Preempted` naming it."""
    prefix = self._checkpoints.save()
    step = self._checkpoints.step
    raise preemption.Preempted(
        f"SIGTERM: {self._run_name} stopped at step {step} of "
        f"{self._total_steps}, checkpoint {prefix}; rerun the same command to "
        "resume from it", step, prefix)
