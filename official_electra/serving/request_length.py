"""The raw-text signatures run the encoder on each request's longest sequence.

`pack_inputs` pads every request to the export's `max_seq_length`, so a batch
of 25-token sentences packed to 128 computes 128 positions for each. Packing
pads only at the end of a row (`[CLS] A [SEP] (B [SEP]) pad ...`) and the
encoder's attention masks padded keys out, so running it on the first
`longest` positions, where `longest` is the batch's longest real sequence,
gives the real positions' outputs (equal up to float rounding: the matmuls
sum the same terms over shorter rows). Truncation is unchanged: it is done by
the packer at `max_seq_length` before the cut.

All ops here are core TensorFlow (within TF Serving's op set).
"""

import tensorflow as tf


def cut_to_longest(packed: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
  """Returns the packed features cut to the batch's longest real sequence.

  Args:
    packed: `input_word_ids`, `input_mask`, `input_type_ids`, int32
      `[batch, seq_length]`, padded at the end of each row (as
      `WordpieceTokenizer.pack_inputs` packs them).

  Returns:
    The same features, `[batch, longest]`; `longest` is at least 1, so an
    empty batch keeps a valid shape.
  """
  mask = packed["input_mask"]
  lengths = tf.reduce_sum(mask, axis=1)
  longest = tf.reduce_max(tf.concat([lengths, tf.ones([1], lengths.dtype)], 0))
  return {name: value[:, :longest] for name, value in packed.items()}


def pad_positions(values: tf.Tensor, seq_length) -> tf.Tensor:
  """Pads per-token outputs `[batch, longest, ...]` with zeros to
  `[batch, seq_length, ...]`, the packed inputs' length."""
  extra = seq_length - tf.shape(values)[1]
  return tf.pad(values, [[0, 0], [0, extra]] +
                [[0, 0]] * (values.shape.rank - 2))
