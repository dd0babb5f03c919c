"""The original's gradient clipping, under any number of replicas."""

import tensorflow as tf


def clip_global_batch_gradients(gradients, clip_norm):
  """Sums per-replica gradients over the replicas, then clips the global
  norm (the original clips at 1.0: `model/optimization.py`).

  Summing first makes the clip act on the global batch's gradient, so any
  number of replicas takes the same step; apply the result with
  `experimental_aggregate_gradients=False`. Sparse (`IndexedSlices`)
  gradients are made dense first, so the norm clipped is the gradient's.

  Args:
    gradients: this replica's gradients (a list of tensors).
    clip_norm: the global-norm bound; None leaves the gradients unclipped.

  Returns:
    The summed (and clipped) gradients, in the same order.
  """
  # A lookup's gradient (`IndexedSlices`) holds one row per token, so a
  # token seen twice has two rows; `clip_by_global_norm` would add their
  # squares instead of squaring their sum, and clip a norm that is not the
  # gradient's (the token types, two ids, most of all). The original's
  # one-hot lookups give the dense gradient: densify first.
  gradients = [tf.convert_to_tensor(gradient)
               if isinstance(gradient, tf.IndexedSlices) else gradient
               for gradient in gradients]
  context = tf.distribute.get_replica_context()
  if context is not None and context.num_replicas_in_sync > 1:
    gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
  if clip_norm is not None:
    gradients, _ = tf.clip_by_global_norm(gradients, clip_norm)
  return gradients


def check_clip_norm(clip_norm) -> None:
  """Raises ValueError unless the models' `gradient_clip_norm` is None or
  positive."""
  if clip_norm is not None and clip_norm <= 0:
    raise ValueError(
        f"gradient_clip_norm must be positive or None, got {clip_norm}")
