"""ELECTRA's fine-tuning head: the `[CLS]` vector -> dropout -> dense."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import mask_dropout


@tf_keras.utils.register_keras_serializable(package="official_electra")
class ClassificationHead(tf_keras.layers.Layer):
  """Logits (or a regression score) from the final hidden state of `[CLS]`.

  As in the original's GLUE heads (Clark et al., 2020, Section 4 and
  `finetune/classification/classification_tasks.py`): no pooler, dropout on
  the first token's final hidden state, then one dense layer with Glorot
  uniform initialisation. A regression task (STS-B) uses `num_outputs=1`.

  Args:
    num_outputs: Number of classes, or 1 for regression.
    dropout_rate: Dropout on the `[CLS]` vector (0.1 in the recipe).
    **kwargs: `tf_keras.layers.Layer` arguments such as `name`.
  """

  def __init__(self, num_outputs, dropout_rate=0.1, **kwargs):
    super().__init__(**kwargs)
    if num_outputs < 1:
      raise ValueError(f"num_outputs must be positive, got {num_outputs}")
    if not 0.0 <= dropout_rate < 1.0:
      raise ValueError(f"dropout_rate must be in [0, 1), got {dropout_rate}")
    self.num_outputs = num_outputs
    self.dropout_rate = dropout_rate
    self.dropout = mask_dropout.MaskDropout(dropout_rate)
    self.dense = tf_keras.layers.Dense(
        num_outputs, kernel_initializer="glorot_uniform", name="logits")

  def call(self, sequence_output, training=None):
    """Applies the head.

    Args:
      sequence_output: float `[batch, seq_len, hidden]`, the encoder's output.
      training: Whether dropout is active.

    Returns:
      float32 `[batch, num_outputs]` logits (scores for regression).
    """
    cls_vector = sequence_output[:, 0, :]
    logits = self.dense(self.dropout(cls_vector, training=training))
    # Losses and softmax read the logits in float32 under mixed precision.
    return tf.cast(logits, tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({"num_outputs": self.num_outputs,
                   "dropout_rate": self.dropout_rate})
    return config
