"""ELECTRA's encoder network: embeddings, projection and Transformer blocks."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import electra_embeddings
from official_electra.modeling.layers import transformer_block

# Additive attention bias for padded keys, as in the original BERT code.
_MASKED_ATTENTION_BIAS = -10000.0


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ElectraEncoder(tf_keras.Model):
  """A BERT-style encoder; ELECTRA builds it twice, as generator and discriminator.

  Both towers take the same `ElectraEmbeddings` instance (Clark et al., 2020,
  Section 3.2); each has its own dense `embeddings_project` from the embedding
  width `E` to its hidden size `H` when they differ, followed by `num_layers`
  post-LayerNorm Transformer blocks. There is no pooler: ELECTRA's heads read
  the sequence output.

  Args:
    vocab_size: Vocabulary size (used when `embedding_layer` is None).
    embedding_size: Embedding width `E`.
    hidden_size: Hidden width `H` of the blocks.
    num_layers: Number of Transformer blocks.
    num_attention_heads: Attention heads per block.
    intermediate_size: Feed-forward width.
    max_position_embeddings: Rows of the position table.
    type_vocab_size: Rows of the token-type table.
    dropout_rate: Hidden dropout.
    attention_dropout_rate: Attention-probability dropout.
    initializer_range: Standard deviation of the truncated-normal initializer.
    layer_norm_epsilon: Epsilon of every LayerNorm.
    embedding_layer: An `ElectraEmbeddings` to share with another encoder; a
      new one is made from the arguments above when None. Its shape must agree
      with `vocab_size`, `embedding_size`, `max_position_embeddings` and
      `type_vocab_size`.
    **kwargs: `tf_keras.Model` arguments such as `name`.
  """

  def __init__(self,
               vocab_size,
               embedding_size,
               hidden_size,
               num_layers,
               num_attention_heads,
               intermediate_size,
               max_position_embeddings=512,
               type_vocab_size=2,
               dropout_rate=0.1,
               attention_dropout_rate=0.1,
               initializer_range=0.02,
               layer_norm_epsilon=1e-12,
               embedding_layer=None,
               **kwargs):
    super().__init__(**kwargs)
    if num_layers < 1:
      raise ValueError(f"num_layers must be positive, got {num_layers}")
    if embedding_layer is None:
      embedding_layer = electra_embeddings.ElectraEmbeddings(
          vocab_size=vocab_size,
          embedding_size=embedding_size,
          max_position_embeddings=max_position_embeddings,
          type_vocab_size=type_vocab_size,
          dropout_rate=dropout_rate,
          initializer_range=initializer_range,
          layer_norm_epsilon=layer_norm_epsilon,
          name="embeddings")
    else:
      expected = (vocab_size, embedding_size, max_position_embeddings,
                  type_vocab_size)
      actual = (embedding_layer.vocab_size, embedding_layer.embedding_size,
                embedding_layer.max_position_embeddings,
                embedding_layer.type_vocab_size)
      if expected != actual:
        raise ValueError(
            "embedding_layer (vocab_size, embedding_size, "
            f"max_position_embeddings, type_vocab_size) = {actual} does not "
            f"match the encoder's {expected}")
    self._config = {
        "vocab_size": vocab_size,
        "embedding_size": embedding_size,
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "num_attention_heads": num_attention_heads,
        "intermediate_size": intermediate_size,
        "max_position_embeddings": max_position_embeddings,
        "type_vocab_size": type_vocab_size,
        "dropout_rate": dropout_rate,
        "attention_dropout_rate": attention_dropout_rate,
        "initializer_range": initializer_range,
        "layer_norm_epsilon": layer_norm_epsilon,
    }
    self.embedding_layer = embedding_layer
    if embedding_size != hidden_size:
      # The original initialises this projection with Glorot uniform.
      self.embedding_projection = tf_keras.layers.Dense(
          hidden_size, kernel_initializer="glorot_uniform",
          name="embeddings_project")
    else:
      self.embedding_projection = None
    self.transformer_layers = [
        transformer_block.TransformerBlock(
            hidden_size=hidden_size,
            num_attention_heads=num_attention_heads,
            intermediate_size=intermediate_size,
            dropout_rate=dropout_rate,
            attention_dropout_rate=attention_dropout_rate,
            initializer_range=initializer_range,
            layer_norm_epsilon=layer_norm_epsilon,
            name=f"layer_{index}") for index in range(num_layers)
    ]

  @property
  def hidden_size(self):
    return self._config["hidden_size"]

  @property
  def num_layers(self):
    return self._config["num_layers"]

  def get_embedding_table(self):
    """The (possibly shared) word embedding table, `[vocab_size, E]`."""
    return self.embedding_layer.embedding_table

  def call(self, inputs, training=None):
    """Encodes a batch.

    Args:
      inputs: dict with int `[batch, seq_len]` tensors `input_word_ids`,
        `input_mask` (1 for real tokens, 0 for padding) and `input_type_ids`.
      training: Whether dropout is active.

    Returns:
      dict with `sequence_output`: float32 `[batch, seq_len, hidden_size]`,
      and `cls_output`: float32 `[batch, hidden_size]`, the final hidden
      state of the first (`[CLS]`) token, which ELECTRA's heads read (there
      is no pooler).
    """
    hidden_states = self.embedding_layer(
        inputs["input_word_ids"], inputs["input_type_ids"], training=training)
    if self.embedding_projection is not None:
      hidden_states = self.embedding_projection(hidden_states)
    input_mask = tf.cast(inputs["input_mask"], tf.float32)
    # float32 `[batch, 1, 1, seq_len]`, broadcast over heads and queries.
    attention_bias = (1.0 - input_mask[:, tf.newaxis, tf.newaxis, :]) * (
        _MASKED_ATTENTION_BIAS)
    for block in self.transformer_layers:
      hidden_states = block(hidden_states, attention_bias, training=training)
    return {"sequence_output": hidden_states,
            "cls_output": hidden_states[:, 0, :]}

  def get_config(self):
    # The embedding layer is serialised by value: a network rebuilt from its
    # config owns a fresh copy (sharing is a property of a live pretrainer).
    config = dict(self._config)
    config["name"] = self.name
    return config
