"""ELECTRA's question-answering heads: answer spans and answerability (SQuAD).

As the original (`finetune/qa/qa_tasks.py`, `QATask.get_prediction_module`;
Clark et al., 2020, Section 3.1 and Appendix A: "the question answering module
from XLNet", simplified in the code): every dense layer has the TF1 defaults
(Glorot-uniform kernel, zero bias), the hidden layers the exact GELU, and the
head has no dropout. Logits outside the answer mask (the document tokens, the
final `[SEP]` and `[CLS]`) get -1000.

- `JointSpanHead` (`joint_prediction=True`, the original's default): the end
  is conditioned on the start, on the gold start in training and on a beam of
  start candidates at prediction.
- `IndependentSpanHead`: one logit each for start and end (BERT's head, the
  one Hugging Face's `ElectraForQuestionAnswering` holds).
- `AnswerabilityClassifier`: the SQuAD 2.0 "no answer" logit, inside either.

The original's TF1 variable names (scope `task_specific/<task>/`), for
conversion: joint `dense` (start), `qa_hidden` (end hidden), `dense_1` (end),
`dense_2`, `dense_3` (answerability); independent `dense` (start), `dense_1`
(end), `dense_2`, `dense_3` (answerability). Without start logits the
answerability layer is the one after the end layer, `[H, 1]`.
"""

import dataclasses

import tensorflow as tf
import tf_keras

from official_electra.modeling.layers import activations

# Added to the logits outside the answer mask, as the original (XLNet: -1e30).
_MASKED_LOGIT_OFFSET = -1000.0
# Log-probability of the beam slots past the end of a sequence shorter than
# the beam (below any masked position's); their index is >= seq_len.
_PAST_SEQUENCE_LOG_PROB = -10000.0


@dataclasses.dataclass(frozen=True)
class SpanHeadConfig:
  """The span head and its loss, with the original's defaults.

  Attributes:
    joint_prediction: End conditioned on the start (`JointSpanHead`), else
      independent start and end logits (`IndependentSpanHead`).
    beam_size: Start candidates, and end candidates per start, at prediction
      (joint head only).
    answerable_classifier: Whether the head has the answerability classifier
      (on for SQuAD 1.1 too in the original, where every label is 0).
    answerable_uses_start_logits: The classifier reads the start-probability
      weighted hidden state beside `[CLS]`, through a hidden layer.
    answerable_weight: Weight of the classifier's sigmoid cross-entropy in the
      loss.
    hidden_size: Width of the original's 512-unit hidden layers (`qa_hidden`
      and the classifier's).
  """
  joint_prediction: bool = True
  beam_size: int = 20
  answerable_classifier: bool = True
  answerable_uses_start_logits: bool = True
  answerable_weight: float = 0.5
  hidden_size: int = 512

  def __post_init__(self):
    if self.beam_size < 1:
      raise ValueError(f"beam_size must be positive, got {self.beam_size}")
    if self.hidden_size < 1:
      raise ValueError(f"hidden_size must be positive, got {self.hidden_size}")
    if self.answerable_weight < 0:
      raise ValueError("answerable_weight must be non-negative, got "
                       f"{self.answerable_weight}")

  def to_dict(self) -> dict:
    return dataclasses.asdict(self)

  @classmethod
  def from_dict(cls, values) -> "SpanHeadConfig":
    """The config of `values`; unknown keys raise `ValueError` naming them."""
    known = {field.name for field in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
      raise ValueError(f"unknown span head settings {', '.join(unknown)}; "
                       f"valid: {', '.join(sorted(known))}")
    return cls(**values)


def answer_mask_from(input_mask, input_type_ids):
  """Where an answer may start or end: `input_mask * input_type_ids +
  one_hot(0)`.

  Args:
    input_mask: int `[batch, seq_len]`, 1 for real tokens.
    input_type_ids: int `[batch, seq_len]`, 1 for the context and final `[SEP]`.

  Returns:
    float32 `[batch, seq_len]`: 1 on the context tokens, the final `[SEP]` and
    `[CLS]` (the "no answer" span), else 0.
  """
  mask = tf.cast(input_mask, tf.float32) * tf.cast(input_type_ids, tf.float32)
  return mask + tf.one_hot(0, tf.shape(mask)[1], dtype=tf.float32)


def _masked(logits, mask):
  """float32 logits with -1000 added where `mask` is 0 (broadcast from the
  left: `mask` `[batch, seq_len]` may mask `[batch, beam, seq_len]` logits)."""
  offset = _MASKED_LOGIT_OFFSET * (1.0 - mask)
  if logits.shape.rank == 3:
    offset = offset[:, tf.newaxis, :]
  # Softmax and the losses read the logits in float32 under mixed precision.
  return tf.cast(logits, tf.float32) + offset


def _top_k(log_probs, k):
  """`tf.math.top_k` over the last axis, padded past a sequence shorter than
  `k` (slots of log-prob -10000 and index >= seq_len), so the output is
  always `[..., k]`."""
  shortfall = tf.maximum(k - tf.shape(log_probs)[-1], 0)
  paddings = [[0, 0]] * (log_probs.shape.rank - 1) + [[0, shortfall]]
  padded = tf.pad(log_probs, paddings, constant_values=_PAST_SEQUENCE_LOG_PROB)
  return tf.math.top_k(padded, k=k)


def _dense(units, name, activation=None):
  return tf_keras.layers.Dense(units, activation=activation,
                               kernel_initializer="glorot_uniform",
                               bias_initializer="zeros", name=name)


def _build_in_scope(layer, input_shape):
  with tf.name_scope(layer.name):
    layer.build(input_shape)


@tf_keras.utils.register_keras_serializable(package="official_electra")
class AnswerabilityClassifier(tf_keras.layers.Layer):
  """The "no answer" logit of SQuAD 2.0 (the original's `answerable_logit`).

  With `uses_start_logits`: concat[H_CLS, sum_j softmax(start_logits)_j H_j]
  -> dense `hidden_size` + GELU -> dense 1; else dense(H_CLS -> 1). Its target
  is `is_impossible`: a positive logit means "no answer".

  Args:
    hidden_size: Width of the hidden layer (512 in the original).
    uses_start_logits: Whether the start distribution's expected hidden state
      is read beside `[CLS]`.
    **kwargs: `tf_keras.layers.Layer` arguments such as `name`.
  """

  def __init__(self, hidden_size=512, uses_start_logits=True, **kwargs):
    super().__init__(**kwargs)
    if hidden_size < 1:
      raise ValueError(f"hidden_size must be positive, got {hidden_size}")
    self.hidden_size = hidden_size
    self.uses_start_logits = uses_start_logits
    self.hidden = (_dense(hidden_size, "hidden", activations.exact_gelu)
                   if uses_start_logits else None)
    self.logit = _dense(1, "logit")

  def build(self, input_shape):
    width = input_shape[-1]
    if self.hidden is not None:
      _build_in_scope(self.hidden, (None, 2 * width))
      _build_in_scope(self.logit, (None, self.hidden_size))
    else:
      _build_in_scope(self.logit, (None, width))
    super().build(input_shape)

  def call(self, sequence_output, start_logits):
    """The answerability logit.

    Args:
      sequence_output: float `[batch, seq_len, hidden]`.
      start_logits: float32 `[batch, seq_len]` masked start logits.

    Returns:
      float32 `[batch]` "no answer" logits.
    """
    # float32, as the start probabilities that weight the hidden states.
    cls_state = tf.cast(sequence_output[:, 0, :], tf.float32)
    if self.hidden is None:
      features = cls_state
    else:
      start_probs = tf.nn.softmax(start_logits, axis=-1)
      expected_start_state = tf.einsum(
          "bs,bsh->bh", start_probs, tf.cast(sequence_output, tf.float32))
      features = self.hidden(tf.concat([cls_state, expected_start_state], -1))
    return tf.cast(tf.squeeze(self.logit(features), -1), tf.float32)

  def get_config(self):
    config = super().get_config()
    config.update({"hidden_size": self.hidden_size,
                   "uses_start_logits": self.uses_start_logits})
    return config


class _SpanHead(tf_keras.layers.Layer):
  """What both heads share: the start logit and the optional classifier."""

  def __init__(self, answerable_classifier, answerable_uses_start_logits,
               hidden_size, **kwargs):
    super().__init__(**kwargs)
    if hidden_size < 1:
      raise ValueError(f"hidden_size must be positive, got {hidden_size}")
    self.answerable_classifier = answerable_classifier
    self.answerable_uses_start_logits = answerable_uses_start_logits
    self.hidden_size = hidden_size
    self.start_dense = _dense(1, "start_logits")
    self.answerability = (AnswerabilityClassifier(
        hidden_size, answerable_uses_start_logits, name="answerability")
                          if answerable_classifier else None)

  def build(self, input_shape):
    _build_in_scope(self.start_dense, (None, None, input_shape[-1]))
    if self.answerability is not None:
      _build_in_scope(self.answerability, (None, None, input_shape[-1]))
    super().build(input_shape)

  def _start_logits(self, sequence_output, mask):
    return _masked(tf.squeeze(self.start_dense(sequence_output), -1), mask)

  def _with_answerability(self, outputs, sequence_output, start_logits):
    if self.answerability is not None:
      outputs["answerable_logit"] = self.answerability(sequence_output,
                                                       start_logits)
    return outputs

  def get_config(self):
    config = super().get_config()
    config.update({
        "answerable_classifier": self.answerable_classifier,
        "answerable_uses_start_logits": self.answerable_uses_start_logits,
        "hidden_size": self.hidden_size})
    return config


@tf_keras.utils.register_keras_serializable(package="official_electra")
class JointSpanHead(_SpanHead):
  """The original's joint-prediction head: the end conditioned on the start.

  Start logits: dense(H -> 1) at every position. End logits for a start at
  position i: concat[H_i, H_j] -> dense `hidden_size` + GELU (`qa_hidden`)
  -> dense 1 at every position j. In training i is the gold start; at
  prediction the `beam_size` most likely starts are kept and, for each, the
  `beam_size` most likely ends. (The first dense is computed as
  `H_i W_top + H_j W_bottom + b`, the same function as the concatenation
  without building `[batch, beam, seq_len, 2H]`.) No end-before-start mask:
  post-processing drops those spans.

  Args:
    beam_size: Start candidates, and end candidates per start (20).
    answerable_classifier: Whether to add the `AnswerabilityClassifier`.
    answerable_uses_start_logits: Its `uses_start_logits`.
    hidden_size: Width of `qa_hidden` and of the classifier's hidden layer.
    **kwargs: `tf_keras.layers.Layer` arguments such as `name`.
  """

  def __init__(self, beam_size=20, answerable_classifier=True,
               answerable_uses_start_logits=True, hidden_size=512, **kwargs):
    super().__init__(answerable_classifier, answerable_uses_start_logits,
                     hidden_size, **kwargs)
    if beam_size < 1:
      raise ValueError(f"beam_size must be positive, got {beam_size}")
    self.beam_size = beam_size
    self.end_hidden = _dense(hidden_size, "end_hidden", activations.exact_gelu)
    self.end_dense = _dense(1, "end_logits")

  def build(self, input_shape):
    width = input_shape[-1]
    _build_in_scope(self.end_hidden, (None, 2 * width))
    _build_in_scope(self.end_dense, (None, None, self.hidden_size))
    super().build(input_shape)

  def call(self, sequence_output, answer_mask, start_positions=None):
    """The training logits (given the gold starts) or the prediction beams.

    Args:
      sequence_output: float `[batch, seq_len, hidden]`, the encoder's output.
      answer_mask: float32 `[batch, seq_len]` (`answer_mask_from`).
      start_positions: int32 `[batch]` gold starts, or None to predict.

    Returns:
      With `start_positions`: float32 `start_logits` and `end_logits`
      `[batch, seq_len]` (masked, the end given the gold start). Without:
      `start_top_log_probs` float32 and `start_top_index` int32
      `[batch, beam]`, `end_top_log_probs` float32 and `end_top_index` int32
      `[batch, beam, beam]` (row i: the ends of start candidate i). Both:
      `answerable_logit` float32 `[batch]` when the head has the classifier.
    """
    start_logits = self._start_logits(sequence_output, answer_mask)
    if start_positions is not None:
      start_states = tf.gather(sequence_output, start_positions, batch_dims=1)
      outputs = {"start_logits": start_logits,
                 "end_logits": self._end_logits(sequence_output, start_states,
                                                answer_mask)}
    else:
      outputs = self._beams(sequence_output, start_logits, answer_mask)
    return self._with_answerability(outputs, sequence_output, start_logits)

  def _end_logits(self, sequence_output, start_states, mask):
    """Masked end logits: `[batch, seq_len]` for start states `[batch, H]`,
    `[batch, beam, seq_len]` for `[batch, beam, H]`."""
    width = sequence_output.shape[-1]
    kernel = tf.cast(self.end_hidden.kernel, self.compute_dtype)
    bias = tf.cast(self.end_hidden.bias, self.compute_dtype)
    sequence_output = tf.cast(sequence_output, self.compute_dtype)
    start_states = tf.cast(start_states, self.compute_dtype)
    # concat[start, H_j] @ kernel: the kernel's first H rows read the start.
    from_start = tf.matmul(start_states, kernel[:width]) + bias
    from_position = tf.einsum("bsh,hd->bsd", sequence_output, kernel[width:])
    if start_states.shape.rank == 3:
      from_position = from_position[:, tf.newaxis]
    hidden = self.end_hidden.activation(
        from_position + from_start[..., tf.newaxis, :])
    return _masked(tf.squeeze(self.end_dense(hidden), -1), mask)

  def _beams(self, sequence_output, start_logits, mask):
    start_top_log_probs, start_top_index = _top_k(
        tf.nn.log_softmax(start_logits), self.beam_size)
    # Slots past a short sequence read its last state; they are never used.
    last = tf.shape(sequence_output)[1] - 1
    start_states = tf.gather(sequence_output,
                             tf.minimum(start_top_index, last), batch_dims=1)
    end_logits = self._end_logits(sequence_output, start_states, mask)
    end_top_log_probs, end_top_index = _top_k(tf.nn.log_softmax(end_logits),
                                              self.beam_size)
    return {"start_top_log_probs": start_top_log_probs,
            "start_top_index": start_top_index,
            "end_top_log_probs": end_top_log_probs,
            "end_top_index": end_top_index}

  def get_config(self):
    config = super().get_config()
    config["beam_size"] = self.beam_size
    return config


@tf_keras.utils.register_keras_serializable(package="official_electra")
class IndependentSpanHead(_SpanHead):
  """Independent start and end logits: dense(H -> 1) each, masked.

  The original's `joint_prediction=False` (BERT's head); without the
  classifier it is Hugging Face's `ElectraForQuestionAnswering.qa_outputs`
  (`Linear(H, 2)`: column 0 the start, 1 the end), which does not mask.

  Args:
    answerable_classifier: Whether to add the `AnswerabilityClassifier`.
    answerable_uses_start_logits: Its `uses_start_logits`.
    hidden_size: Width of the classifier's hidden layer.
    **kwargs: `tf_keras.layers.Layer` arguments such as `name`.
  """

  def __init__(self, answerable_classifier=True,
               answerable_uses_start_logits=True, hidden_size=512, **kwargs):
    super().__init__(answerable_classifier, answerable_uses_start_logits,
                     hidden_size, **kwargs)
    self.end_dense = _dense(1, "end_logits")

  def build(self, input_shape):
    _build_in_scope(self.end_dense, (None, None, input_shape[-1]))
    super().build(input_shape)

  def call(self, sequence_output, answer_mask, start_positions=None):
    """Start and end logits (the same in training and at prediction).

    Args:
      sequence_output: float `[batch, seq_len, hidden]`, the encoder's output.
      answer_mask: float32 `[batch, seq_len]` (`answer_mask_from`).
      start_positions: Ignored (accepted so both heads are called alike).

    Returns:
      float32 `start_logits` and `end_logits` `[batch, seq_len]` (masked), and
      `answerable_logit` `[batch]` when the head has the classifier.
    """
    del start_positions  # The end does not depend on the start.
    start_logits = self._start_logits(sequence_output, answer_mask)
    outputs = {"start_logits": start_logits,
               "end_logits": _masked(
                   tf.squeeze(self.end_dense(sequence_output), -1),
                   answer_mask)}
    return self._with_answerability(outputs, sequence_output, start_logits)


def build_span_head(config: SpanHeadConfig, name="span_head"):
  """The head `config` describes (`answerable_weight` is the loss's)."""
  answerability = {
      "answerable_classifier": config.answerable_classifier,
      "answerable_uses_start_logits": config.answerable_uses_start_logits,
      "hidden_size": config.hidden_size}
  if config.joint_prediction:
    return JointSpanHead(beam_size=config.beam_size, name=name,
                         **answerability)
  return IndependentSpanHead(name=name, **answerability)
