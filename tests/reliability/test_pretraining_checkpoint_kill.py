"""Pretraining: a kill while a checkpoint is written leaves the previous one.

TF's checkpoint manager writes `ckpt-N.data-*` and `ckpt-N.index` first and
replaces the small `checkpoint` state file (atomically, by rename) only after
both are complete. A kill at any moment of a save therefore leaves either the
old state file (naming the previous, complete checkpoint) plus stray files of
the unfinished one, or the new state file with a complete checkpoint. This test
builds the first case on disk, from a real run, at its worst: both files of the
next checkpoint cut in half; then checks that the previous checkpoint loads
and that the same command resumes from it and finishes.
"""

import os

import tensorflow as tf

from tests.test_train import _command
from tests.test_train import _logged_steps
from tests.test_train import _run
from tests.training.conftest import pretraining_data  # noqa: F401  fixture


def _truncate_copy(source, destination):
  with open(source, "rb") as source_file:
    content = source_file.read()
  with open(destination, "wb") as destination_file:
    destination_file.write(content[:len(content) // 2])


def test_kill_during_a_save_leaves_the_previous_checkpoint_loadable(
    tmp_path, pretraining_data):
  model_dir = tmp_path / "run"
  first = _run(_command(pretraining_data, model_dir,
                        "run_pretraining.num_train_steps=3"))
  assert first.returncode == 0, first.stderr[-3000:]
  previous = tf.train.latest_checkpoint(str(model_dir))
  assert previous.endswith("ckpt-3")
  # The files a save of ckpt-4 killed half-way leaves behind.
  for suffix in (".index", ".data-00000-of-00001"):
    _truncate_copy(previous + suffix, str(model_dir / f"ckpt-4{suffix}"))

  assert tf.train.latest_checkpoint(str(model_dir)) == previous
  reader = tf.train.load_checkpoint(previous)
  names = [name for name in reader.get_variable_to_shape_map()
           if name.startswith("model/discriminator_network/")]
  assert len(names) > 10
  for name in names:
    reader.get_tensor(name)

  rerun = _run(_command(pretraining_data, model_dir,
                        "run_pretraining.num_train_steps=5"))
  assert rerun.returncode == 0, rerun.stderr[-3000:]
  assert tf.train.latest_checkpoint(str(model_dir)).endswith("ckpt-5")
  assert _logged_steps(model_dir) == [1, 2, 3, 4, 5]  # resumed after step 3
  reader = tf.train.load_checkpoint(str(model_dir / "ckpt-4"))
  for name in names:
    reader.get_tensor(name)  # ckpt-4 was rewritten whole by the rerun.
  assert os.path.getsize(str(model_dir / "ckpt-4.index")) > os.path.getsize(
      previous + ".index") // 2
