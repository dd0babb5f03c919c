"""The training checkpoints of one fine-tuning seed, and its progress bar.

A fine-tuning run saves `<run_dir>/train_checkpoints/ckpt-<step>` every
`save_every_steps` optimizer steps (`preemption.CheckpointCallback`, the one
checkpoint callback of pretraining and fine-tuning) and when training ends,
keeping the last `max_to_keep`. A checkpoint holds the classifier, the
optimizer (its step counter, which also drives the learning-rate schedule, and
its moments) and the dropout layers' random generators. The data order is a
function of the seed and the epoch (`inputs.make_training_dataset`), so the
step alone says where to continue and a resumed run computes what an
uninterrupted one computes. A kill during a save leaves the previous
checkpoint named (`preemption.StepCheckpoints`); the orphaned files of the
unfinished one are ignored.

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


class TrainingCheckpoints(preemption.StepCheckpoints):
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
    optimizer = model.optimizer
    optimizer.build(model.trainable_variables)
    checkpoint = tf.train.Checkpoint(
        model=model, optimizer=optimizer,
        dropout_random_state=checkpoints.dropout_random_state(model))
    super().__init__(
        tf.train.CheckpointManager(checkpoint, directory,
                                   max_to_keep=max_to_keep),
        optimizer.iterations, save_every_steps)

  def restore_latest(self) -> int:
    """Restores the latest checkpoint, if any; returns the step it holds (or 0)."""
    prefix = self.manager.latest_checkpoint
    if prefix:
      try:
        restored = self.manager.checkpoint.restore(prefix)
        restored.assert_existing_objects_matched()
      except (AssertionError, ValueError, tf.errors.OpError) as error:
        raise checkpoints.CheckpointError(
            f"{prefix}: cannot resume from this training checkpoint "
            f"({errors.first_line(error)}); it was written with another "
            f"configuration: delete {self.manager.directory} to restart this "
            "seed, or use a new --model_dir") from None
    return self.step
