"""ELECTRA fine-tuned for extractive question answering (SQuAD 1.1 and 2.0)."""

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import encoder_serialization
from official_electra.modeling.models import gradient_clipping
from official_electra.modeling.models import unconverted_steps

# "sum": the original's `run_finetuning.py` sums the windows' losses over the
# batch; "mean" divides that sum by the global batch size.
LOSS_REDUCTIONS = ("sum", "mean")
_ENCODER_INPUTS = ("input_word_ids", "input_mask", "input_type_ids")


def span_losses(outputs, labels, answerable_weight):
  """The original's loss of each window (`QATask.get_prediction_module`).

  `(CE(start) + CE(end)) / 2 + answerable_weight * sigmoid-CE(answerable)`,
  the cross-entropies over every position of the masked logits, the last term
  only when `outputs` has `answerable_logit`.

  Args:
    outputs: dict of float32 `start_logits`, `end_logits` `[batch, seq_len]`
      (the end given the gold start for the joint head) and optionally
      `answerable_logit` `[batch]`.
    labels: dict of int `start_positions`, `end_positions` `[batch]` and
      float `is_impossible` `[batch]` (read with the classifier only).
    answerable_weight: Weight of the answerability term (0.5).

  Returns:
    float32 `[batch]` losses.
  """
  span_loss = 0.5 * (
      tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.cast(labels["start_positions"], tf.int32),
          logits=outputs["start_logits"]) +
      tf.nn.sparse_softmax_cross_entropy_with_logits(
          labels=tf.cast(labels["end_positions"], tf.int32),
          logits=outputs["end_logits"]))
  if "answerable_logit" not in outputs:
    return span_loss
  answerable_loss = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(labels["is_impossible"], tf.float32),
      logits=outputs["answerable_logit"])
  return span_loss + answerable_weight * answerable_loss


@tf_keras.utils.register_keras_serializable(package="official_electra")
@unconverted_steps.steps_without_autograph
class ElectraSpanLabeler(tf_keras.Model):
  """An `ElectraEncoder` (the pretrained discriminator) with a span head.

  Clark et al. (2020), Section 3.1: the discriminator fine-tuned on SQuAD with
  the original's question-answering module (`span_heads.JointSpanHead`) or
  BERT's independent start/end head (`span_heads.IndependentSpanHead`).

  Called with `training=True` and `start_positions` among the inputs, it
  returns the logits the loss reads (the joint head's end given the gold
  start); otherwise the prediction outputs: `start_top_log_probs`,
  `start_top_index` `[batch, beam]`, `end_top_log_probs`, `end_top_index`
  `[batch, beam, beam]` (joint head) or `start_logits`, `end_logits`
  `[batch, seq_len]` (independent head), and `answerable_logit` `[batch]`
  (the "no answer" logit) with the classifier. `predict` returns them as a
  dict of numpy arrays.

  Train with `compile(optimizer=...)` (no Keras loss: the loss is
  `span_losses`) and `fit` on `(features, labels)`, labels a dict of int32
  `start_positions`, `end_positions` and float32 `is_impossible` `[batch]`.
  As the original, `train_step` clips the global norm of the gradients after
  summing them over replicas; `fit` and `evaluate` log the loss as `loss`
  (`evaluate` conditions the end on the gold start too, without dropout).

  Args:
    encoder: An `ElectraEncoder` (or any network mapping the input dict to a
      dict with `sequence_output` `[batch, seq_len, hidden]`).
    head_config: A `span_heads.SpanHeadConfig` (or its dict).
    gradient_clip_norm: Global-norm clipping of the gradients in `fit` (1.0 in
      the original); None turns clipping off.
    loss_reduction: `sum` (the original: the sum of the windows' losses on
      each replica, so the replicas' gradients add up to the global batch's)
      or `mean` (that sum over the global batch size).
    **kwargs: `tf_keras.Model` arguments such as `name`.
  """

  def __init__(self, encoder, head_config, gradient_clip_norm=1.0,
               loss_reduction="sum", **kwargs):
    super().__init__(**kwargs)
    if isinstance(head_config, dict):
      head_config = span_heads.SpanHeadConfig.from_dict(head_config)
    gradient_clipping.check_clip_norm(gradient_clip_norm)
    if loss_reduction not in LOSS_REDUCTIONS:
      raise ValueError(f"unknown loss_reduction {loss_reduction!r}; valid: "
                       f"{', '.join(LOSS_REDUCTIONS)}")
    self.encoder = encoder
    self.head_config = head_config
    self.gradient_clip_norm = gradient_clip_norm
    self.loss_reduction = loss_reduction
    self.span_head = span_heads.build_span_head(head_config, name="span_head")
    self._create_loss_tracker()

  @tf.__internal__.tracking.no_automatic_dependency_tracking
  def _create_loss_tracker(self):
    # Not tracked: the mean loss of an epoch stays out of checkpoints, as
    # Keras' own compiled loss metric.
    self._loss_tracker = tf_keras.metrics.Mean(name="loss")

  @property
  def metrics(self):
    return [self._loss_tracker] + super().metrics

  def call(self, inputs, training=None):
    """Labels spans of a batch (any sequence length up to the position table).

    Args:
      inputs: dict with int32 `[batch, seq_len]` tensors `input_word_ids`,
        `input_mask` and `input_type_ids`; in training also int32
        `start_positions` `[batch]`. Other keys are ignored.
      training: Whether dropout is active (and, with `start_positions`,
        whether to return the training logits).

    Returns:
      The dict of outputs the class docstring lists.
    """
    start_positions = inputs.get("start_positions") if training else None
    return self._span_outputs(inputs, start_positions, training)

  def _span_outputs(self, inputs, start_positions, training):
    encoder_inputs = {key: inputs[key] for key in _ENCODER_INPUTS}
    sequence_output = self.encoder(encoder_inputs,
                                   training=training)["sequence_output"]
    mask = span_heads.answer_mask_from(inputs["input_mask"],
                                       inputs["input_type_ids"])
    if start_positions is not None:
      start_positions = tf.cast(start_positions, tf.int32)
    return self.span_head(sequence_output, mask,
                          start_positions=start_positions)

  def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None):
    """This replica's loss: the windows' `span_losses` summed, or (`mean`)
    over the global batch size.

    Args:
      x: Unused (Keras' signature).
      y: The labels dict (see the class docstring).
      y_pred: The training outputs (`start_logits`, `end_logits`, ...).
      sample_weight: Unsupported; must be None.

    Returns:
      float32 scalar.
    """
    del x  # The loss reads the outputs and labels only.
    if sample_weight is not None:
      raise ValueError("ElectraSpanLabeler does not support sample weights")
    losses = span_losses(y_pred, y, self.head_config.answerable_weight)
    if self.loss_reduction == "sum":
      return tf.reduce_sum(losses)
    # Per-replica batch size times the replicas, as Keras' own mean losses.
    return tf.nn.compute_average_loss(losses)

  def train_step(self, data):
    """One optimizer step on `(features, labels)`, the gradients clipped by
    their global norm."""
    features, labels = data
    inputs = dict(features, start_positions=labels["start_positions"])
    with tf.GradientTape() as tape:
      outputs = self(inputs, training=True)
      loss = self.compute_loss(y=labels, y_pred=outputs)
    gradients = tape.gradient(loss, self.trainable_variables)
    gradients = gradient_clipping.clip_global_batch_gradients(
        gradients, self.gradient_clip_norm)
    self.optimizer.apply_gradients(zip(gradients, self.trainable_variables),
                                   experimental_aggregate_gradients=False)
    return self._track_loss(loss)

  def test_step(self, data):
    """The loss of `(features, labels)`: the training logits without dropout."""
    features, labels = data
    outputs = self._span_outputs(features, labels["start_positions"],
                                 training=False)
    return self._track_loss(self.compute_loss(y=labels, y_pred=outputs))

  def _track_loss(self, loss):
    # The global batch's loss is the sum of the replicas' losses; the metric
    # averages its updates over replicas, hence the factor.
    replicas = tf.distribute.get_replica_context().num_replicas_in_sync
    self._loss_tracker.update_state(loss * replicas)
    return {metric.name: metric.result() for metric in self.metrics}

  def get_config(self):
    return {"encoder": encoder_serialization.serialize_encoder(self.encoder),
            "head_config": self.head_config.to_dict(),
            "gradient_clip_norm": self.gradient_clip_norm,
            "loss_reduction": self.loss_reduction,
            "name": self.name}

  @classmethod
  def from_config(cls, config, custom_objects=None):
    return cls(**dict(config, encoder=encoder_serialization.deserialize_encoder(
        config["encoder"], custom_objects)))
