"""`[CLS] A [SEP] (B [SEP])` packing with BERT's truncation, in core TF ops.

Only core TensorFlow ops (no `tensorflow_text.RoundRobinTrimmer`, whose
`TFText>RoundRobinTrim` op stock TF Serving lacks), so a raw-text SavedModel
signature that packs inputs loads in TF Serving.
"""

from typing import Sequence

import tensorflow as tf


def truncated_lengths(first_lengths: tf.Tensor, second_lengths: tf.Tensor,
                      budget: int) -> tuple[tf.Tensor, tf.Tensor]:
  """Lengths kept by BERT's `_truncate_seq_pair`, in closed form.

  BERT removes one token at a time from the end of the longer segment (the
  second one on a tie) until both fit in `budget`. The shorter segment is
  therefore kept whole when it fits in half the budget; otherwise the first
  segment keeps `ceil(budget / 2)` tokens and the second the rest.

  Args:
    first_lengths: int `[batch]` lengths of segment A.
    second_lengths: int `[batch]` lengths of segment B, same dtype.
    budget: the number of tokens both may keep together.

  Returns:
    `(first_kept, second_kept)`, int `[batch]` each.
  """
  half_up = (budget + 1) // 2
  first_kept = tf.minimum(first_lengths,
                          tf.maximum(budget - second_lengths, half_up))
  second_kept = tf.minimum(second_lengths, budget - first_kept)
  return first_kept, second_kept


def _keep_prefix(segment: tf.RaggedTensor, lengths: tf.Tensor
                 ) -> tf.RaggedTensor:
  positions = tf.ragged.range(segment.row_lengths())
  return tf.ragged.boolean_mask(segment, positions < tf.expand_dims(lengths, 1))


def pack_segments(segments: Sequence[tf.RaggedTensor], seq_length: int,
                  cls_id: int, sep_id: int, pad_id: int
                  ) -> dict[str, tf.Tensor]:
  """Truncates and packs one or two segments into fixed-length model inputs.

  One segment: `[CLS] A [SEP]`, A cut to `seq_length - 2`. Two segments:
  `[CLS] A [SEP] B [SEP]`, cut to `seq_length - 3` tokens together by
  `truncated_lengths` (the longer one first, as BERT does).

  Args:
    segments: one or two int RaggedTensors `[batch, (tokens)]`.
    seq_length: the output length, at least 3 (2 for one segment).
    cls_id: id of `[CLS]`.
    sep_id: id of `[SEP]`.
    pad_id: id of `[PAD]`, used after the last `[SEP]`.

  Returns:
    A dict of int32 `[batch, seq_length]` tensors: `input_word_ids`,
    `input_mask` (1 on real tokens) and `input_type_ids` (0 up to and with the
    first `[SEP]`, 1 on B and its `[SEP]`, 0 on padding).

  Raises:
    ValueError: for other than one or two segments or too short a length.
  """
  if len(segments) not in (1, 2):
    raise ValueError(f"pack_segments takes 1 or 2 segments, got {len(segments)}")
  if seq_length < len(segments) + 1:
    raise ValueError(f"seq_length={seq_length} leaves no room for tokens")
  segments = [tf.cast(segment, tf.int32) for segment in segments]
  batch_size = segments[0].nrows()
  if len(segments) == 1:
    kept = [tf.minimum(segments[0].row_lengths(), seq_length - 2)]
  else:
    kept = list(truncated_lengths(segments[0].row_lengths(),
                                  segments[1].row_lengths(), seq_length - 3))
  cls = tf.fill([batch_size, 1], cls_id)
  sep = tf.fill([batch_size, 1], sep_id)
  pieces = [cls]
  type_pieces = [tf.zeros([batch_size, 1], tf.int32)]
  for type_id, (segment, length) in enumerate(zip(segments, kept)):
    segment = _keep_prefix(segment, length)
    pieces += [segment, sep]
    type_pieces += [tf.ones_like(segment) * type_id,
                    tf.fill([batch_size, 1], type_id)]
  word_ids = tf.concat(pieces, axis=1)
  type_ids = tf.concat(type_pieces, axis=1)
  shape = [None, seq_length]
  return {
      "input_word_ids": word_ids.to_tensor(default_value=pad_id, shape=shape),
      "input_mask": tf.ones_like(word_ids).to_tensor(shape=shape),
      "input_type_ids": type_ids.to_tensor(shape=shape),
  }
