"""The study's kept checkpoints, on a local disk and on `ram://` (no renames)."""

import os
import uuid

import pytest
import tensorflow as tf

from official_electra import files
from official_electra.experiments import study_pretraining


def _model_dir(root):
  tf.io.gfile.makedirs(root)
  checkpoint = tf.train.Checkpoint(weight=tf.Variable([1.5, -2.0]))
  checkpoint.write(os.path.join(root, "ckpt-5"))
  tf.train.Checkpoint(weight=tf.Variable([9.0, 9.0])).write(
      os.path.join(root, "ckpt-10"))
  files.write_text(os.path.join(root, "model_config.json"), "{}\n")
  files.write_text(os.path.join(root, "vocab.txt"), "[PAD]\n")
  return root


def _restored(kept_dir):
  weight = tf.Variable([0.0, 0.0])
  tf.train.Checkpoint(weight=weight).read(
      tf.train.latest_checkpoint(kept_dir)).expect_partial()
  return weight.numpy().tolist()


@pytest.mark.parametrize("where", ["local", "ram"])
def test_a_kept_checkpoint_is_complete_and_restores(tmp_path, where):
  root = (str(tmp_path / "run") if where == "local"
          else f"ram://study-{uuid.uuid4().hex}/run")
  model_dir = _model_dir(root)
  kept_dir = study_pretraining.keep_checkpoint(model_dir, 5, {"disc_auc": 0.7})
  assert kept_dir == os.path.join(model_dir, "kept", "step_5")
  assert study_pretraining.is_kept(kept_dir)
  assert sorted(tf.io.gfile.listdir(kept_dir)) == sorted(
      ["checkpoint", "ckpt-5.index", "ckpt-5.data-00000-of-00001",
       "model_config.json", "vocab.txt", "pretraining_metrics.json"])
  assert files.read_json(os.path.join(kept_dir, "pretraining_metrics.json")) == {
      "step": 5, "disc_auc": 0.7}
  assert _restored(kept_dir) == [1.5, -2.0]
  # Nothing is left beside it (no staging folder).
  assert tf.io.gfile.listdir(os.path.join(model_dir, "kept")) in (
      ["step_5"], ["step_5/"])


def test_the_kept_folder_restores_after_it_is_moved(tmp_path):
  model_dir = _model_dir(str(tmp_path / "run"))
  kept_dir = study_pretraining.keep_checkpoint(model_dir, 5, {})
  moved = tmp_path / "elsewhere"
  os.rename(kept_dir, moved)
  assert _restored(str(moved)) == [1.5, -2.0]


def test_a_folder_without_its_metrics_file_is_not_kept(tmp_path):
  # What an object store's file-by-file publish leaves when it dies: every
  # file but the one copied last.
  model_dir = _model_dir(str(tmp_path / "run"))
  kept_dir = study_pretraining.keep_checkpoint(model_dir, 5, {})
  os.remove(os.path.join(kept_dir, "pretraining_metrics.json"))
  assert not study_pretraining.is_kept(kept_dir)
