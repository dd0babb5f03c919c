"""A post-LayerNorm Transformer encoder block, as in BERT and ELECTRA."""

import math

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import activations
from official_electra.modeling.layers import layer_normalization
from official_electra.modeling.layers import mask_dropout


@tf_keras.utils.register_keras_serializable(package="official_electra")
class TransformerBlock(tf_keras.layers.Layer):
  """Self-attention and a feed-forward network, each followed by add & LayerNorm.

  This is the block of BERT (Devlin et al., 2019) that ELECTRA's towers use
  (Clark et al., 2020, Section 2): post-LayerNorm, exact (erf) GELU, dropout on
  the attention probabilities and on both residual branches, and the
  `-10000` additive attention mask of the original code.

  It is written here rather than taken from Model Garden's
  `TransformerEncoderBlock` for speed, with the variables mapping one-to-one
  onto the original checkpoint names (`attention/self/{query,key,value}` are
  the three column blocks of `attention_qkv/kernel`):
  - the query, key and value projections are one fused `[hidden, 3 * hidden]`
    matmul, split by `unstack` (whose gradient is one `stack`; slicing would
    cost three full-size zero-filled gradients and their sum);
  - the dense layers see `[batch * seq_len, width]` matrices, so TensorFlow
    fuses each matmul with its bias;
  - GELU and LayerNorm have closed-form gradients fused by XLA
    (`elementwise_gradients`), and dropout's gradient is one multiply by its
    mask (`MaskDropout`).

  Args:
    hidden_size: Width `H` of the input and output.
    num_attention_heads: Number of heads; must divide `hidden_size`.
    intermediate_size: Width of the feed-forward layer.
    dropout_rate: Dropout on the residual branches.
    attention_dropout_rate: Dropout on the attention probabilities.
    initializer_range: Standard deviation of the truncated-normal initializer.
    layer_norm_epsilon: Epsilon of both LayerNorms.
  """

  def __init__(self,
               hidden_size,
               num_attention_heads,
               intermediate_size,
               dropout_rate=0.1,
               attention_dropout_rate=0.1,
               initializer_range=0.02,
               layer_norm_epsilon=1e-12,
               **kwargs):
    super().__init__(**kwargs)
    if hidden_size % num_attention_heads:
      raise ValueError(
          f"hidden_size ({hidden_size}) is not a multiple of "
          f"num_attention_heads ({num_attention_heads})")
    self.hidden_size = hidden_size
    self.num_attention_heads = num_attention_heads
    self.head_size = hidden_size // num_attention_heads
    self.intermediate_size = intermediate_size
    self.dropout_rate = dropout_rate
    self.attention_dropout_rate = attention_dropout_rate
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon

    def dense(units, name, activation=None):
      return tf_keras.layers.Dense(
          units, activation=activation, name=name,
          kernel_initializer=tf_keras.initializers.TruncatedNormal(
              stddev=initializer_range))

    def layer_norm(name):
      # LayerNorm runs in float32 for numerical stability under mixed precision.
      return layer_normalization.LayerNormalization(
          epsilon=layer_norm_epsilon, dtype=tf.float32, name=name)

    self.attention_qkv = dense(3 * hidden_size, "attention_qkv")
    self.attention_output = dense(hidden_size, "attention_output")
    self.attention_layer_norm = layer_norm("attention_layer_norm")
    self.intermediate = dense(intermediate_size, "intermediate",
                              activation=activations.exact_gelu)
    self.output_dense = dense(hidden_size, "output")
    self.output_layer_norm = layer_norm("output_layer_norm")
    self.attention_dropout = mask_dropout.MaskDropout(attention_dropout_rate)
    self.attention_output_dropout = mask_dropout.MaskDropout(dropout_rate)
    self.output_dropout = mask_dropout.MaskDropout(dropout_rate)

  def build(self, input_shape):
    hidden_shape = (None, self.hidden_size)
    for sublayer, sublayer_input_shape in (
        (self.attention_qkv, hidden_shape),
        (self.attention_output, hidden_shape),
        (self.attention_layer_norm, hidden_shape),
        (self.intermediate, hidden_shape),
        (self.output_dense, (None, self.intermediate_size)),
        (self.output_layer_norm, hidden_shape)):
      # The name scope gives variables their full path, e.g.
      # `layer_3/attention_layer_norm/gamma` (weight decay and layer-wise
      # learning rates select variables by these names).
      with tf.name_scope(sublayer.name):
        sublayer.build(sublayer_input_shape)
    super().build(input_shape)

  def call(self, hidden_states, attention_bias, training=None):
    """Runs the block.

    Args:
      hidden_states: `[batch, seq_len, hidden]`, float (any compute dtype).
      attention_bias: float32 `[batch, 1, 1, seq_len]`, 0 for real keys and a
        large negative value for padding.
      training: Whether dropout is active.

    Returns:
      float32 `[batch, seq_len, hidden]`.
    """
    batch_size = tf.shape(hidden_states)[0]
    seq_len = tf.shape(hidden_states)[1]
    # [batch * seq_len, hidden]: every dense layer is one matmul + bias.
    flat_states = tf.reshape(hidden_states, [-1, self.hidden_size])
    qkv = tf.reshape(
        self.attention_qkv(flat_states),
        [batch_size, seq_len, 3, self.num_attention_heads, self.head_size])
    # Each [batch, heads, seq_len, head_size].
    query, key, value = tf.unstack(tf.transpose(qkv, [2, 0, 3, 1, 4]))
    query *= tf.cast(1.0 / math.sqrt(self.head_size), query.dtype)
    scores = tf.matmul(query, key, transpose_b=True)
    # Softmax in float32 for numerical stability under mixed precision.
    probs = tf.nn.softmax(tf.cast(scores, tf.float32) + attention_bias,
                          axis=-1)
    probs = self.attention_dropout(
        tf.cast(probs, value.dtype), training=training)
    context = tf.reshape(
        tf.transpose(tf.matmul(probs, value), [0, 2, 1, 3]),
        [-1, self.hidden_size])
    attention_output = self.attention_output_dropout(
        self.attention_output(context), training=training)
    attention_output = self.attention_layer_norm(
        tf.cast(attention_output, tf.float32) +
        tf.cast(flat_states, tf.float32))
    layer_output = self.output_dropout(
        self.output_dense(self.intermediate(attention_output)),
        training=training)
    layer_output = self.output_layer_norm(
        tf.cast(layer_output, tf.float32) + attention_output)
    return tf.reshape(layer_output,
                      [batch_size, seq_len, self.hidden_size])

  def get_config(self):
    config = super().get_config()
    config.update({
        "hidden_size": self.hidden_size,
        "num_attention_heads": self.num_attention_heads,
        "intermediate_size": self.intermediate_size,
        "dropout_rate": self.dropout_rate,
        "attention_dropout_rate": self.attention_dropout_rate,
        "initializer_range": self.initializer_range,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config
