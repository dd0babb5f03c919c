"""The embedding block that ELECTRA's generator and discriminator share."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import layer_normalization
from official_electra.modeling.layers import mask_dropout


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ElectraEmbeddings(tf_keras.layers.Layer):
  """Word, position and token-type embeddings, summed, then LayerNorm and dropout.

  ELECTRA (Clark et al., 2020, Section 3.2 "Weight sharing") shares this whole
  block between the generator and the discriminator: build it once and pass the
  same instance to both encoders, so a checkpoint holds one copy.

  Args:
    vocab_size: Number of rows of the word embedding table.
    embedding_size: Width `E` of every table.
    max_position_embeddings: Number of rows of the position table.
    type_vocab_size: Number of rows of the token-type table.
    dropout_rate: Dropout applied after the LayerNorm.
    initializer_range: Standard deviation of the truncated-normal initializer.
    layer_norm_epsilon: Epsilon of the LayerNorm.
  """

  def __init__(self,
               vocab_size,
               embedding_size,
               max_position_embeddings=512,
               type_vocab_size=2,
               dropout_rate=0.1,
               initializer_range=0.02,
               layer_norm_epsilon=1e-12,
               **kwargs):
    super().__init__(**kwargs)
    for arg_name, value in (("vocab_size", vocab_size),
                            ("embedding_size", embedding_size),
                            ("max_position_embeddings", max_position_embeddings),
                            ("type_vocab_size", type_vocab_size)):
      if value < 1:
        raise ValueError(f"{arg_name} must be positive, got {value}")
    if not 0.0 <= dropout_rate < 1.0:
      raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate}")
    self.vocab_size = vocab_size
    self.embedding_size = embedding_size
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.dropout_rate = dropout_rate
    self.initializer_range = initializer_range
    self.layer_norm_epsilon = layer_norm_epsilon
    # LayerNorm runs in float32 for numerical stability under mixed precision.
    self.layer_norm = layer_normalization.LayerNormalization(
        epsilon=layer_norm_epsilon, dtype=tf.float32, name="LayerNorm")
    self.dropout = mask_dropout.MaskDropout(dropout_rate)

  def build(self, input_shape):
    def initializer():
      # One initializer per table: an unseeded tf_keras initializer draws
      # the same stream at every call, which made the position embeddings
      # a copy of the first rows of the word embeddings (position p = token
      # id p) and the token types a copy of [PAD] and [UNK]. The original
      # draws every table independently.
      return tf_keras.initializers.TruncatedNormal(
          stddev=self.initializer_range)

    self.word_embeddings = self.add_weight(
        "word_embeddings", shape=(self.vocab_size, self.embedding_size),
        initializer=initializer())
    self.position_embeddings = self.add_weight(
        "position_embeddings",
        shape=(self.max_position_embeddings, self.embedding_size),
        initializer=initializer())
    self.token_type_embeddings = self.add_weight(
        "token_type_embeddings",
        shape=(self.type_vocab_size, self.embedding_size),
        initializer=initializer())
    with tf.name_scope(self.layer_norm.name):
      self.layer_norm.build((None, None, self.embedding_size))
    super().build(input_shape)

  def call(self, input_word_ids, input_type_ids, training=None):
    """Embeds a batch of token ids.

    Args:
      input_word_ids: int `[batch, seq_len]` token ids.
      input_type_ids: int `[batch, seq_len]` segment ids.
      training: Whether dropout is active.

    Returns:
      float32 `[batch, seq_len, embedding_size]`.
    """
    seq_len = tf.shape(input_word_ids)[1]
    embeddings = (
        tf.gather(self.word_embeddings, input_word_ids) +
        tf.gather(self.token_type_embeddings, input_type_ids) +
        self.position_embeddings[tf.newaxis, :seq_len, :])
    embeddings = self.layer_norm(embeddings)
    return self.dropout(embeddings, training=training)

  @property
  def embedding_table(self):
    """The word embedding table, `[vocab_size, embedding_size]`."""
    return self.word_embeddings

  def get_config(self):
    config = super().get_config()
    config.update({
        "vocab_size": self.vocab_size,
        "embedding_size": self.embedding_size,
        "max_position_embeddings": self.max_position_embeddings,
        "type_vocab_size": self.type_vocab_size,
        "dropout_rate": self.dropout_rate,
        "initializer_range": self.initializer_range,
        "layer_norm_epsilon": self.layer_norm_epsilon,
    })
    return config
