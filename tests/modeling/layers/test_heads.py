"""The generator's tied MLM head and the discriminator's RTD head."""

import numpy as np
import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import discriminator_head
from official_electra.modeling.layers import electra_embeddings
from official_electra.modeling.layers import masked_lm_head


def make_embeddings():
  embeddings = electra_embeddings.ElectraEmbeddings(
      vocab_size=30, embedding_size=6, max_position_embeddings=10)
  embeddings(tf.zeros([1, 2], tf.int32), tf.zeros([1, 2], tf.int32))
  return embeddings


def test_masked_lm_head_gathers_then_projects_on_tied_table():
  embeddings = make_embeddings()
  head = masked_lm_head.MaskedLMHead(embeddings)
  sequence = tf.random.normal([2, 7, 12])
  positions = tf.constant([[1, 3, 0], [6, 2, 2]])
  logits = head(sequence, positions)
  assert logits.shape == (2, 3, 30) and logits.dtype == tf.float32
  # The output embedding IS the input table, plus the head's own bias.
  assert head.embedding_layer.embedding_table is embeddings.word_embeddings
  head.output_bias.assign(tf.range(30, dtype=tf.float32))
  gathered = tf.gather(sequence, positions, batch_dims=1)
  hidden = head.layer_norm(head.dense(gathered))
  expected = tf.matmul(hidden, embeddings.word_embeddings,
                       transpose_b=True) + tf.range(30, dtype=tf.float32)
  np.testing.assert_allclose(head(sequence, positions), expected, atol=1e-5)
  assert head(sequence).shape == (2, 7, 30)


def test_masked_lm_head_owns_no_copy_of_the_table():
  embeddings = make_embeddings()
  head = masked_lm_head.MaskedLMHead(embeddings)
  head(tf.random.normal([1, 3, 4]), tf.constant([[0, 1]]))
  table_ids = {id(variable) for variable in head.trainable_variables
               if variable.shape == (30, 6)}
  assert table_ids == {id(embeddings.word_embeddings)}


def test_masked_lm_head_config_round_trip():
  head = masked_lm_head.MaskedLMHead(make_embeddings(), initializer_range=0.03)
  config = head.get_config()
  clone = masked_lm_head.MaskedLMHead.from_config(config)
  assert clone.initializer_range == 0.03
  assert clone.embedding_layer.vocab_size == 30


def test_discriminator_head_one_logit_per_token():
  head = discriminator_head.DiscriminatorHead(hidden_size=12)
  logits = head(tf.random.normal([3, 5, 12]))
  assert logits.shape == (3, 5) and logits.dtype == tf.float32
  assert [v.shape for v in head.trainable_variables] == [(12, 12), (12,),
                                                         (12, 1), (1,)]
  clone = discriminator_head.DiscriminatorHead.from_config(head.get_config())
  assert clone.hidden_size == 12


def test_heads_output_float32_under_mixed_bfloat16():
  tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
  try:
    embeddings = make_embeddings()
    mlm = masked_lm_head.MaskedLMHead(embeddings)
    rtd = discriminator_head.DiscriminatorHead(hidden_size=4)
    sequence = tf.random.normal([1, 3, 4])
    assert mlm(sequence, tf.constant([[0, 2]])).dtype == tf.float32
    assert rtd(sequence).dtype == tf.float32
  finally:
    tf_keras.mixed_precision.set_global_policy("float32")
