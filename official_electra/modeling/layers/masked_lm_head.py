"""The generator's masked-LM head, with output embeddings tied to the input ones."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import activations
from official_electra.modeling.layers import layer_normalization


@tf_keras.utils.register_keras_serializable(package="official_electra")
class MaskedLMHead(tf_keras.layers.Layer):
  """dense(H -> E) + GELU + LayerNorm, then logits against the word embeddings.

  As the original `generator_predictions` (Clark et al., 2020, Section 3.2):
  `logits = LayerNorm(gelu(h W + b)) . word_embeddings^T + output_bias`. The
  output embedding is the input word embedding table of `embedding_layer`
  (tied), and the head has its own `output_bias`.

  Args:
    embedding_layer: The `ElectraEmbeddings` whose word table is tied.
    initializer_range: Standard deviation of the dense layer's initializer.
    layer_norm_epsilon: Epsilon of the LayerNorm.
  """

  def __init__(self, embedding_layer, initializer_range=0.02,
               layer_norm_epsilon=1e-12, **kwargs):
    super().__init__(**kwargs)
    self.embedding_layer = embedding_layer
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon
    self.dense = tf_keras.layers.Dense(
        embedding_layer.embedding_size,
        activation=activations.exact_gelu,
        kernel_initializer=tf_keras.initializers.TruncatedNormal(
            stddev=initializer_range),
        name="dense")
    # LayerNorm runs in float32 for numerical stability under mixed precision.
    self.layer_norm = layer_normalization.LayerNormalization(
        epsilon=layer_norm_epsilon, dtype=tf.float32, name="LayerNorm")

  def build(self, input_shape):
    with tf.name_scope(self.dense.name):
      self.dense.build(input_shape)
    with tf.name_scope(self.layer_norm.name):
      self.layer_norm.build(
          (None, None, self.embedding_layer.embedding_size))
    # Added to float32 logits: not auto-cast to the compute dtype.
    self.output_bias = self.add_weight(
        "output_bias", shape=(self.embedding_layer.vocab_size,),
        initializer="zeros", experimental_autocast=False)
    super().build(input_shape)

  def call(self, sequence_output, positions=None):
    """Computes vocabulary logits at the given positions.

    Args:
      sequence_output: `[batch, seq_len, hidden]` encoder output.
      positions: int32 `[batch, N]` positions to predict. Rows are gathered
        BEFORE the vocabulary projection, so only `[batch, N, vocab]` logits
        exist. None predicts every position (`[batch, seq_len, vocab]`, for
        the All-Tokens MLM ablation only).

    Returns:
      float32 logits `[batch, N or seq_len, vocab_size]`.
    """
    if positions is not None:
      sequence_output = tf.gather(sequence_output, positions, batch_dims=1)
    hidden = self.layer_norm(self.dense(sequence_output))
    hidden = tf.cast(hidden, self.compute_dtype)
    table = tf.cast(self.embedding_layer.embedding_table, self.compute_dtype)
    # One [rows, E] x [V, E]^T product on the flattened rows. A 3-D x 2-D
    # tf.matmul would be a batched product, whose gradient into the table is
    # one [V, E] product per example, summed afterwards (1.65x slower for the
    # whole MLM step of gin/experiments/cpu_efficiency.gin on CPU). tensordot
    # would first write the transposed [E, V] table and its gradient; the
    # transposed operand inside the matmul kernel is 1.5x faster for this
    # product's forward and both gradients on CPU (docs/benchmarks.md).
    rows = tf.reshape(hidden, [-1, self.embedding_layer.embedding_size])
    logits = tf.linalg.matmul(rows, table, transpose_b=True)
    logits = tf.reshape(
        logits,
        tf.concat([tf.shape(hidden)[:-1], [self.embedding_layer.vocab_size]],
                  axis=0))
    logits.set_shape(
        hidden.shape[:-1].concatenate([self.embedding_layer.vocab_size]))
    # Logits go to softmax and sampling in float32.
    return tf.cast(logits, tf.float32) + self.output_bias

  def get_config(self):
    config = super().get_config()
    config.update({
        "embedding_layer": tf_keras.layers.serialize(self.embedding_layer),
        "initializer_range": self.initializer_range,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config

  @classmethod
  def from_config(cls, config):
    config = dict(config)
    config["embedding_layer"] = tf_keras.layers.deserialize(
        config["embedding_layer"])
    return cls(**config)
