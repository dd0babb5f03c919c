"""Reads and writes checkpoints under the original ELECTRA's TF1 names.

Reading takes any TF1-style (name-based) checkpoint, such as the released
ELECTRA checkpoints, and skips `global_step` and the optimizer's `adam_m` /
`adam_v` slots. Writing produces a name-based checkpoint (`SaveV2`), readable
by `tf.train.load_checkpoint`, by the original code and by transformers'
`load_tf_weights_in_electra`.
"""

import os

import numpy as np
import tensorflow as tf

from official_electra import errors
from official_electra import files
from official_electra.conversion import electra_parts
from official_electra.conversion import tf1_names
from official_electra.modeling import checkpoints
from official_electra.modeling import model_config

_SKIPPED_NAMES = ("global_step",)
_SKIPPED_SUFFIXES = ("/adam_m", "/adam_v")


def _is_training_state(name):
  return name in _SKIPPED_NAMES or name.endswith(_SKIPPED_SUFFIXES)


def read_tf1_checkpoint(prefix):
  """`{tf1_name: numpy array}` of a TF1 checkpoint, training state skipped.

  Raises:
    ConversionError: when `prefix` is not a readable checkpoint, or is an
      object-based (TF2) checkpoint.
  """
  try:
    # The prefix directly when it is one (on ram:// a prefix also looks like
    # a folder, which load_checkpoint would search).
    reader = (checkpoints.checkpoint_reader(prefix)
              if model_config.is_checkpoint_prefix(prefix)
              else tf.train.load_checkpoint(prefix))
  except (ValueError, tf.errors.OpError) as error:
    raise electra_parts.ConversionError(
        f"{prefix}: not a readable TF1 checkpoint "
        f"({errors.first_line(error)}); pass the prefix, e.g. "
        "electra_small/electra_small (the path without .index)") from None
  names = reader.get_variable_to_shape_map()
  if "_CHECKPOINTABLE_OBJECT_GRAPH" in names:
    raise electra_parts.ConversionError(
        f"{prefix}: an object-based TF2 checkpoint, not TF1 names; pass it as "
        "--checkpoint (this project's layout), not --tf1_checkpoint")
  return {name: reader.get_tensor(name) for name in sorted(names)
          if not _is_training_state(name)}


def check_new_prefix(prefix):
  """Raises `ConversionError` when a checkpoint exists at `prefix`."""
  for suffix in (".index", ".data-00000-of-00001"):
    if files.exists(prefix + suffix):
      raise electra_parts.ConversionError(
          f"{prefix}{suffix} already exists; pass a new output prefix "
          "(nothing is overwritten)")


def write_tf1_checkpoint(model, prefix):
  """Writes every variable of `model` under its TF1 name at `prefix`.

  The data file is written first and the `.index` (what readers look for)
  last, both under temporary names renamed at the end, so an interrupted run
  leaves no readable half checkpoint.

  Returns:
    The list of TF1 names written.
  """
  check_new_prefix(prefix)
  files.makedirs(os.path.dirname(files.absolute(prefix)))
  weights = tf1_names.read_weights(model)
  names = sorted(weights)
  staging = prefix + ".tmp-converting"
  tf.raw_ops.SaveV2(
      prefix=staging, tensor_names=names, shape_and_slices=[""] * len(names),
      tensors=[tf.constant(np.ascontiguousarray(weights[name]))
               for name in names])
  for suffix in (".data-00000-of-00001", ".index"):
    files.move(staging + suffix, prefix + suffix)
  return names
