"""Tests of the shared feature spec: our encoder equals protobuf's."""

import numpy as np
import pytest
import tensorflow as tf

from official_electra.data import pretraining_features


def _proto(ids, mask, segments):
  def feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
  return tf.train.Example(features=tf.train.Features(feature={
      "input_ids": feature(ids), "input_mask": feature(mask),
      "segment_ids": feature(segments)}))


@pytest.mark.parametrize("high", [2, 30522, 2**40])
def test_serialized_examples_equal_protobuf_examples(high):
  rng = np.random.default_rng(high)
  ids = rng.integers(0, high, (50, 24))
  ids[0, :6] = [0, 1, 127, 128, 16383, 16384]
  mask = rng.integers(0, 2, (50, 24))
  segments = rng.integers(0, 2, (50, 24))
  records = pretraining_features.serialize_examples(ids, mask, segments)
  for row, record in enumerate(records):
    assert tf.train.Example.FromString(record) == _proto(
        ids[row], mask[row], segments[row])


def test_parse_examples_gives_int32_model_inputs():
  ids = np.arange(12).reshape(2, 6) + 100
  mask = np.ones((2, 6), np.int64)
  segments = np.array([[0, 0, 0, 1, 1, 1], [0] * 6])
  parsed = pretraining_features.parse_examples(
      tf.constant(pretraining_features.serialize_examples(ids, mask, segments)),
      max_seq_length=6)
  assert set(parsed) == {"input_word_ids", "input_mask", "input_type_ids"}
  assert all(t.dtype == tf.int32 for t in parsed.values())
  np.testing.assert_array_equal(parsed["input_word_ids"], ids)
  np.testing.assert_array_equal(parsed["input_type_ids"], segments)


def test_serialize_rejects_bad_arrays():
  with pytest.raises(ValueError, match="non-negative"):
    pretraining_features.serialize_examples(
        -np.ones((1, 2), np.int64), np.ones((1, 2)), np.zeros((1, 2)))
  with pytest.raises(ValueError, match="one shape"):
    pretraining_features.serialize_examples(
        np.ones((1, 2), np.int64), np.ones((1, 3)), np.zeros((1, 2)))


def test_record_header_is_recognised_by_its_checksum(tmp_path):
  path = tmp_path / "records.tfrecord"
  for length in (0, 1, 300, 70_000):
    with tf.io.TFRecordWriter(str(path)) as writer:
      writer.write(b"x" * length)
    header = path.read_bytes()[:pretraining_features.RECORD_HEADER_BYTES]
    assert pretraining_features.is_record_header(header), length
  for text in (b"hello world!", b'{"vocab": 12', b"\x00" * 12, b"short"):
    assert not pretraining_features.is_record_header(text), text
