"""ELECTRA fine-tuned for sentence(-pair) classification or regression (GLUE)."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import classification_head
from official_electra.modeling.models import encoder_serialization
from official_electra.modeling.models import gradient_clipping
from official_electra.modeling.models import unconverted_steps


@tf_keras.utils.register_keras_serializable(package="official_electra")
@unconverted_steps.steps_without_autograph
class ElectraClassifier(tf_keras.Model):
  """An `ElectraEncoder` (the pretrained discriminator) with a `ClassificationHead`.

  Clark et al. (2020), Section 4: the whole discriminator is fine-tuned with a
  linear head on the final hidden state of `[CLS]`. Train with `compile`/`fit`
  on `(features, labels)` where labels are class ids (cross-entropy on the
  logits) or scores (mean squared error, `num_outputs=1`). As in the original
  (model/optimization.py), `train_step` clips the gradients' global norm before
  the optimizer sees them.

  Args:
    encoder: An `ElectraEncoder` (or any network mapping the input dict to a
      dict with `sequence_output` `[batch, seq_len, hidden]`).
    num_outputs: Number of classes, or 1 for regression.
    dropout_rate: Dropout of the head.
    gradient_clip_norm: Global-norm clipping of the gradients in `fit` (1.0 in
      the original); None turns clipping off.
    **kwargs: `tf_keras.Model` arguments such as `name`.
  """

  def __init__(self, encoder, num_outputs, dropout_rate=0.1,
               gradient_clip_norm=1.0, **kwargs):
    super().__init__(**kwargs)
    gradient_clipping.check_clip_norm(gradient_clip_norm)
    self.encoder = encoder
    self.num_outputs = num_outputs
    self.dropout_rate = dropout_rate
    self.gradient_clip_norm = gradient_clip_norm
    self.classification_head = classification_head.ClassificationHead(
        num_outputs, dropout_rate=dropout_rate, name="classification_head")

  def call(self, inputs, training=None):
    """Classifies a batch.

    Args:
      inputs: dict with int32 `[batch, seq_len]` tensors `input_word_ids`,
        `input_mask` and `input_type_ids`.
      training: Whether dropout is active.

    Returns:
      float32 `[batch, num_outputs]` logits (scores for regression).
    """
    encoder_inputs = {key: inputs[key] for key in
                      ("input_word_ids", "input_mask", "input_type_ids")}
    sequence_output = self.encoder(encoder_inputs,
                                   training=training)["sequence_output"]
    return self.classification_head(sequence_output, training=training)

  def train_step(self, data):
    """One optimizer step on `(features, labels)`, gradients clipped by global norm."""
    features, labels = data
    with tf.GradientTape() as tape:
      outputs = self(features, training=True)
      loss = self.compute_loss(features, labels, outputs)
    gradients = tape.gradient(loss, self.trainable_variables)
    gradients = gradient_clipping.clip_global_batch_gradients(
        gradients, self.gradient_clip_norm)
    self.optimizer.apply_gradients(zip(gradients, self.trainable_variables),
                                   experimental_aggregate_gradients=False)
    return self.compute_metrics(features, labels, outputs, sample_weight=None)

  def get_config(self):
    return {"encoder": encoder_serialization.serialize_encoder(self.encoder),
            "num_outputs": self.num_outputs,
            "dropout_rate": self.dropout_rate,
            "gradient_clip_norm": self.gradient_clip_norm,
            "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**dict(config, encoder=encoder_serialization.deserialize_encoder(
        config["encoder"], custom_objects)))
