"""Training checkpoints of `finetuning/resumable_training.py` (SIGTERM in a
fine-tuning seed: `tests/test_preemption.py`)."""

import os

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

from official_electra import preemption
from official_electra.finetuning import resumable_training
from official_electra.modeling import checkpoints


def _compiled_model(units=3):
  model = tf_keras.Sequential([tf_keras.layers.Dense(units),
                               tf_keras.layers.Dropout(0.5),
                               tf_keras.layers.Dense(1)])
  model.build([None, 2])
  model.compile(optimizer=tf_keras.optimizers.Adam(0.1), loss="mse")
  return model


def _batches(num_batches):
  features = np.arange(num_batches * 4, dtype=np.float32).reshape([-1, 2])
  return tf.data.Dataset.from_tensor_slices(
      (features, features.sum(axis=1))).batch(2)


def test_periodic_saves_keep_the_latest(tmp_path):
  model = _compiled_model()
  saved = resumable_training.TrainingCheckpoints(
      model, str(tmp_path), save_every_steps=2, max_to_keep=2)
  with preemption.SigtermFlag() as sigterm:
    model.fit(_batches(7), verbose=0, callbacks=[
        preemption.CheckpointCallback(saved, sigterm, "run", 7)])
  assert saved.step == 7
  assert [os.path.basename(path) for path in tf.train.get_checkpoint_state(
      str(tmp_path)).all_model_checkpoint_paths] == ["ckpt-4", "ckpt-6"]


def test_restore_continues_exactly_and_rejects_another_shape(tmp_path):
  tf_keras.backend.experimental.enable_tf_random_generator()
  tf_keras.utils.set_random_seed(0)
  model = _compiled_model()
  saved = resumable_training.TrainingCheckpoints(
      model, str(tmp_path), save_every_steps=100, max_to_keep=2)
  model.fit(_batches(3), verbose=0)
  saved.save()
  model.fit(_batches(2), verbose=0)  # What the resumed model must reproduce.
  restored_model = _compiled_model()
  restored = resumable_training.TrainingCheckpoints(
      restored_model, str(tmp_path), save_every_steps=100, max_to_keep=2)
  assert restored.restore_latest() == 3
  restored_model.fit(_batches(2), verbose=0)
  for expected, actual in zip(model.variables, restored_model.variables):
    np.testing.assert_array_equal(actual.numpy(), expected.numpy())
  other = resumable_training.TrainingCheckpoints(
      _compiled_model(units=4), str(tmp_path), save_every_steps=100,
      max_to_keep=2)
  with pytest.raises(checkpoints.CheckpointError,
                     match=r"ckpt-3: cannot resume .* delete .* to restart"):
    other.restore_latest()
