"""The FLOP rate of a training step's own matmuls, each timed alone.

The pretraining benchmark's MFU divides by the peak of one large square
matmul; the matmuls of a step are smaller (`[tokens, 256] x [256, 1024]` at
ELECTRA-Small, batched `[128, 64]` attention products) and run below that
peak even with nothing else in the step. This module times every matmul shape
of one training step (forward, and both backward products), in the step's
compute dtype and with the step's TensorFlow kernels, and returns their total
FLOPs over their total time: the rate a step made of nothing but its matmuls
would reach. It counts the matmuls of `official_electra.training.flops`'s
matmul count.
"""

import collections
import time


def _matmul_shapes(discriminator, generator, batch_size, seq_len, num_slots):
  """Counts of `(kind, batch, m, k, n)` products in one training step.

  `kind` is `"nn"` (`a @ b`), `"nt"` (`a @ b^T`) or `"tn"` (`a^T @ b`), the
  three products of a dense layer's forward and backward passes.
  """
  shapes = collections.Counter()

  def dense(m, k, n, times=1):
    shapes[("nn", 1, m, k, n)] += times  # Forward.
    shapes[("nt", 1, m, n, k)] += times  # Gradient of the input.
    shapes[("tn", 1, k, m, n)] += times  # Gradient of the kernel.

  def encoder(config):
    tokens = batch_size * seq_len
    hidden = config.hidden_size
    heads = config.num_attention_heads
    head_size = hidden // heads
    if config.embedding_size != hidden:
      dense(tokens, config.embedding_size, hidden)
    layers = config.num_layers
    dense(tokens, hidden, 3 * hidden, layers)
    dense(tokens, hidden, hidden, layers)
    dense(tokens, hidden, config.intermediate_size, layers)
    dense(tokens, config.intermediate_size, hidden, layers)
    batch = batch_size * heads
    # scores = q k^T and its gradients (ds k, ds^T q); context = p v and its
    # gradients (dc v^T, p^T dc).
    shapes[("nt", batch, seq_len, head_size, seq_len)] += layers
    shapes[("nn", batch, seq_len, seq_len, head_size)] += layers
    shapes[("tn", batch, seq_len, seq_len, head_size)] += layers
    shapes[("nn", batch, seq_len, seq_len, head_size)] += layers
    shapes[("nt", batch, seq_len, head_size, seq_len)] += layers
    shapes[("tn", batch, seq_len, seq_len, head_size)] += layers

  encoder(discriminator)
  encoder(generator)
  tokens = batch_size * seq_len
  dense(tokens, discriminator.hidden_size, discriminator.hidden_size)
  slots = batch_size * num_slots
  dense(slots, generator.hidden_size, discriminator.embedding_size)
  # The tied vocabulary projection, as `MaskedLMHead` runs it against the
  # `[V, E]` table: logits = h t^T, its gradients dl t and dl^T h.
  embedding, vocab = discriminator.embedding_size, discriminator.vocab_size
  shapes[("nt", 1, slots, embedding, vocab)] += 1
  shapes[("nn", 1, slots, vocab, embedding)] += 1
  shapes[("tn", 1, vocab, slots, embedding)] += 1
  return shapes


def compute_dtype(mixed_precision):
  """The matmul dtype of a Keras mixed-precision policy name."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return {"float32": tf.float32, "mixed_bfloat16": tf.bfloat16,
          "mixed_float16": tf.float16}[mixed_precision]


def best_seconds(function, args, repeats, calls=1):
  """Best wall time of one `function(*args)` over `repeats` timings, warm.

  Each timing makes `calls` calls and waits (`.numpy()`) for the last only,
  and counts a `calls`-th of its time: on a GPU, where calls return before
  the kernels finish and run in order, that hides the wait for the result
  behind the queue (on a CPU a call runs to its end, and 1 is enough).
  """
  function(*args).numpy()
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    for _ in range(calls - 1):
      function(*args)
    function(*args).numpy()
    best = min(best, (time.perf_counter() - start) / calls)
  return best


def step_matmul_timings(discriminator, generator, batch_size, seq_len,
                        num_slots, mixed_precision, repeats=5):
  """Every matmul shape of one training step, each timed alone.

  Args:
    discriminator: the discriminator's `EncoderConfig`.
    generator: the generator's `EncoderConfig`.
    batch_size: examples per step.
    seq_len: tokens per example.
    num_slots: masked slots per example.
    mixed_precision: `float32`, `mixed_bfloat16` or `mixed_float16`.
    repeats: timed runs per shape (the best counts).

  Returns:
    A list of dicts, the largest share of the step's matmul time first:
    `product` (`"nn"`, `"nt"` or `"tn"`), `batch`, `m`, `k`, `n` (the product
    is `[batch, m, k] x [batch, k, n]`), `count` (per step), `seconds` (best
    time of one product) and `flops` (of one product).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  dtype = compute_dtype(mixed_precision)
  products = {
      "nn": tf.function(lambda a, b: tf.matmul(a, b)),
      "nt": tf.function(lambda a, b: tf.matmul(a, b, transpose_b=True)),
      "tn": tf.function(lambda a, b: tf.matmul(a, b, transpose_a=True)),
  }
  timings = []
  shapes = _matmul_shapes(discriminator, generator, batch_size, seq_len,
                          num_slots)
  for (kind, batch, m, k, n), count in shapes.items():
    left_shape = {"nn": [m, k], "nt": [m, k], "tn": [k, m]}[kind]
    right_shape = {"nn": [k, n], "nt": [n, k], "tn": [k, n]}[kind]
    if batch > 1:
      left_shape, right_shape = [batch] + left_shape, [batch] + right_shape
    left = tf.cast(tf.random.normal(left_shape), dtype)
    right = tf.cast(tf.random.normal(right_shape), dtype)
    timings.append(dict(
        product=kind, batch=batch, m=m, k=k, n=n, count=count,
        seconds=best_seconds(products[kind], (left, right), repeats),
        flops=2.0 * batch * m * k * n))
  return sorted(timings, key=lambda t: seconds_per_step([t]), reverse=True)


def seconds_per_step(timings):
  """Total time of `timings`' products, each as often as a step runs it."""
  return sum(t["count"] * t["seconds"] for t in timings)


def flops_per_second(timings):
  """Total FLOPs / total time of `step_matmul_timings`' products."""
  return (sum(t["count"] * t["flops"] for t in timings) /
          seconds_per_step(timings))
