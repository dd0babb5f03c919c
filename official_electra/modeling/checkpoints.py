"""The project's one checkpoint layout, and restoring the kept encoder from it.

Pretraining checkpoints (written by `official_electra.train` and by
`official_electra.convert`) are `tf.train.Checkpoint(model=ElectraPretrainer,
...)`: the discriminator lives at `model/discriminator_network`, the generator
at `model/generator_network`, and the shared embedding block is stored once.
"""

import os

import tensorflow as tf


class CheckpointError(ValueError):
  """A checkpoint is missing, unreadable or does not fit the model."""


def resolve_checkpoint(path):
  """Returns a checkpoint prefix for a checkpoint prefix or a model directory.

  Raises:
    CheckpointError: when nothing loadable is there.
  """
  if os.path.isdir(path):
    latest = tf.train.latest_checkpoint(path)
    if latest is None:
      raise CheckpointError(
          f"{path}: no checkpoint in this directory; pass a model_dir written "
          "by official_electra.train or official_electra.convert, or a "
          "checkpoint prefix such as DIR/ckpt-1000")
    return latest
  if tf.io.gfile.exists(path + ".index"):
    return path
  raise CheckpointError(
      f"{path}: not a checkpoint (no {path}.index) nor a directory holding one; "
      "pass a model_dir or a checkpoint prefix such as DIR/ckpt-1000")


def restore_discriminator(encoder, path):
  """Loads the discriminator's weights from a pretraining checkpoint.

  Args:
    encoder: A built `ElectraEncoder` of the same architecture.
    path: A model directory or a checkpoint prefix.

  Returns:
    The checkpoint prefix that was read.

  Raises:
    CheckpointError: listing the encoder variables the checkpoint lacks, or
      whose shapes differ; nothing is left silently at its initial value.
  """
  if not encoder.built:
    raise CheckpointError("build the encoder (call it once) before restoring")
  prefix = resolve_checkpoint(path)
  root = tf.train.Checkpoint(
      model=tf.train.Checkpoint(discriminator_network=encoder))
  try:
    status = root.read(prefix)
  except (ValueError, tf.errors.InvalidArgumentError) as error:
    raise CheckpointError(
        f"{prefix}: the discriminator in this checkpoint does not fit the "
        f"configured architecture ({first_line(error)}); use the gin/model "
        "config the checkpoint was trained with") from None
  try:
    status.assert_existing_objects_matched()
  except AssertionError as error:
    raise CheckpointError(
        f"{prefix}: variables of the configured discriminator are missing "
        f"from the checkpoint ({first_line(error)}); check that it is an "
        "ELECTRA pretraining checkpoint of the same architecture") from None
  status.expect_partial()
  return prefix


def first_line(error):
  text = str(error).strip()
  return text.splitlines()[0] if text else type(error).__name__
