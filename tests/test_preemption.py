"""The one checkpoint callback, `preemption.CheckpointCallback`: its cadence in
block mode (`steps_per_execution` > 1) and SIGTERM -> a checkpoint, then
`Preempted` naming it."""

import os
import signal

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra import preemption


def _compiled_model(steps_per_execution):
  model = tf_keras.Sequential([tf_keras.layers.Dense(1)])
  model.build([None, 2])
  model.compile(optimizer=tf_keras.optimizers.SGD(0.01), loss="mse",
                steps_per_execution=steps_per_execution)
  return model


def _step_checkpoints(model, directory, save_every_steps):
  manager = tf.train.CheckpointManager(
      tf.train.Checkpoint(model=model, optimizer=model.optimizer), directory,
      max_to_keep=None)
  return preemption.StepCheckpoints(manager, model.optimizer.iterations,
                                    save_every_steps)


def _batches(num_batches):
  features = np.ones([num_batches * 2, 2], np.float32)
  return tf.data.Dataset.from_tensor_slices(
      (features, features.sum(axis=1))).batch(2)


def _saved_steps(directory):
  state = tf.train.get_checkpoint_state(directory)
  return [int(path.rsplit("-", 1)[1])
          for path in state.all_model_checkpoint_paths] if state else []


class _SigtermAfterStep(tf_keras.callbacks.Callback):
  """Sends this process a SIGTERM at the end of the execution that reaches
  `step` (listed before the checkpoint callback, as a real one arrives)."""

  def __init__(self, step):
    super().__init__()
    self._step = step

  def on_train_batch_end(self, batch, logs=None):
    if int(self.model.optimizer.iterations.numpy()) >= self._step:
      os.kill(os.getpid(), signal.SIGTERM)
      self._step = float("inf")


def test_saves_at_the_first_block_end_at_or_after_each_multiple(tmp_path):
  model = _compiled_model(steps_per_execution=3)
  saved = _step_checkpoints(model, str(tmp_path), save_every_steps=5)
  with preemption.SigtermFlag() as sigterm:
    callback = preemption.CheckpointCallback(saved, sigterm)
    # Blocks end at steps 3, 6, 9, 12, 15, 18 and 19.
    model.fit(_batches(19), verbose=0, callbacks=[callback])
    assert _saved_steps(str(tmp_path)) == [6, 12, 15]
    callback.finish()
    callback.finish()  # The end is saved once.
  assert _saved_steps(str(tmp_path)) == [6, 12, 15, 19]


def test_the_cadence_goes_on_from_the_step_a_run_resumes_at(tmp_path):
  model = _compiled_model(steps_per_execution=3)
  saved = _step_checkpoints(model, str(tmp_path), save_every_steps=5)
  with preemption.SigtermFlag() as sigterm:
    callback = preemption.CheckpointCallback(saved, sigterm)
    model.fit(_batches(7), verbose=0, callbacks=[callback])  # Ends at 7.
    model.fit(_batches(9), verbose=0, callbacks=[callback])  # 10, 13, 16.
  assert _saved_steps(str(tmp_path)) == [6, 10, 16]


# A program's one run (pretraining), and one of several (a fine-tuning seed).
@pytest.mark.parametrize("run, message", [
    ((), r"^SIGTERM at step 6; checkpoint .*ckpt-6; rerun the same command to "
     r"resume from it$"),
    (("SST-2 seed 0", 90), r"^SIGTERM: SST-2 seed 0 stopped at step 6 of 90, "
     r"checkpoint .*ckpt-6; rerun the same command to resume from it$"),
])
def test_sigterm_saves_the_block_end_and_raises_preempted(tmp_path, run,
                                                          message):
  model = _compiled_model(steps_per_execution=3)
  saved = _step_checkpoints(model, str(tmp_path), save_every_steps=100)
  previous_handler = signal.getsignal(signal.SIGTERM)
  with pytest.raises(preemption.Preempted, match=message) as raised:
    with preemption.SigtermFlag() as sigterm:
      model.fit(_batches(30), verbose=0, callbacks=[
          _SigtermAfterStep(4),
          preemption.CheckpointCallback(saved, sigterm, *run)])
  assert raised.value.step == 6
  assert raised.value.checkpoint == os.path.join(str(tmp_path), "ckpt-6")
  assert tf.train.latest_checkpoint(str(tmp_path)) == raised.value.checkpoint
  assert _saved_steps(str(tmp_path)) == [6]
  assert int(model.optimizer.iterations.numpy()) == 6  # Nothing ran after.
  assert signal.getsignal(signal.SIGTERM) == previous_handler


def test_a_sigterm_after_the_last_block_is_raised_by_finish(tmp_path):
  model = _compiled_model(steps_per_execution=2)
  saved = _step_checkpoints(model, str(tmp_path), save_every_steps=100)
  with pytest.raises(preemption.Preempted,
                     match=r"^SIGTERM: run 1 stopped at step 4 of 4, "
                     r"checkpoint .*ckpt-4; rerun") as raised:
    with preemption.SigtermFlag() as sigterm:
      callback = preemption.CheckpointCallback(saved, sigterm, "run 1", 4)
      model.fit(_batches(4), verbose=0, callbacks=[callback])
      os.kill(os.getpid(), signal.SIGTERM)
      callback.finish()
  assert raised.value.step == 4
  assert _saved_steps(str(tmp_path)) == [4]
