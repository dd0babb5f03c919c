"""The gradient of a batch as the sum of its micro-batches' (memory of one
micro-batch), for the pretrainer's `gradient_accumulation_steps`."""

import tensorflow as tf


def accumulated_gradients(micro_batch_gradients, data, masking, seeds,
                          steps: int, variables=None):
  """Runs `steps` micro-batches (the rows of `data` and `masking` split in
  order) one after another and sums their gradients and losses.

  Args:
    micro_batch_gradients: `(inputs, masking, seeds) -> (gradients,
      variables, loss)` of one micro-batch, its losses already divided by
      the whole batch's weights (so the sum is the whole batch's).
    data: the batch, a dict of `[batch, ...]` tensors.
    masking: the batch's masking outputs, a dict of `[batch, ...]` tensors
      (drawn once for the whole batch, as without accumulation).
    seeds: int64 `[2, 3]` seeds of the step; micro-batch i samples with its
      own (i = 0: the step's).
    steps: micro-batches; it divides the batch.
    variables: the trained variables when the model is built: then every
      micro-batch runs in the loop (one copy of its graph). None: the first
      micro-batch runs outside the loop, which builds the variables.

  Returns:
    `(gradients, variables, loss)`, summed over the micro-batches.
  """
  rows = tf.shape(data["input_word_ids"])[0] // steps

  def micro_batch(index):
    def part(tensor):
      return tensor[index * rows:(index + 1) * rows]
    offset = tf.cast(index, seeds.dtype) * tf.constant(
        [[0, 0, 0], [0, 1, 1]], seeds.dtype)
    return ({name: part(tensor) for name, tensor in data.items()},
            {name: part(tensor) for name, tensor in masking.items()},
            seeds + offset)

  if variables is not None:
    first = 0
    gradients = [tf.zeros_like(variable) for variable in variables]
    loss = tf.constant(0.0, tf.float32)
  else:
    first = 1
    gradients, variables, loss = micro_batch_gradients(*micro_batch(0))

  def body(index, sums, total):
    more, _, micro_loss = micro_batch_gradients(*micro_batch(index))
    return (index + 1, [a + b for a, b in zip(sums, more)],
            total + micro_loss)

  # One iteration at a time: no micro-batch depends on the previous one's
  # activations, so with the default `parallel_iterations` (10) the
  # executor may run several micro-batches' passes at once, and hold their
  # activations together.
  _, gradients, loss = tf.while_loop(
      lambda index, sums, total: index < steps, body,
      (tf.constant(first), gradients, loss), parallel_iterations=1)
  return gradients, variables, loss
