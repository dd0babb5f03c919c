"""A resumed run finds its place in the data stream by arithmetic
(`pretraining_dataloader.record_stream`): epochs already trained are skipped
by their record counts, and only the current epoch's records before the step
are read (raw). The stream from any record equals the uninterrupted stream
read that far, and a run restored at step 1,000,000 starts and trains."""

import json

import numpy as np
import tensorflow as tf

from official_electra.data import dataset_info
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.training import callbacks
from official_electra.training import resumable_input
from tests.training import tiny_pretraining

_SEED, _BUFFER = 7, 50
# Records a stream may read beyond those it gives, by prefetching windows of
# `_BUFFER` records in parallel (up to 3 windows seen on 2 cores).
_READ_AHEAD = 20 * _BUFFER


def _files(data):
  return pretraining_files.resolve_files(str(data[0]))


def _records(dataset, count):
  return [record.numpy() for record in dataset.take(count)]


def _counting_reader(counter):
  """`tf.data.TFRecordDataset` whose every record read adds 1 to `counter`
  (an int64 `tf.Variable`)."""
  reader = tf.data.TFRecordDataset

  def counting_reader(*args, **kwargs):

    def count(record):
      with tf.control_dependencies([counter.assign_add(1)]):
        return tf.identity(record)

    return reader(*args, **kwargs).map(count)

  return counting_reader


def test_the_build_records_each_shards_examples(pretraining_data):
  info = dataset_info.read_dataset_info(str(pretraining_data[0]))
  files = _files(pretraining_data)
  assert len(info.shard_examples) == len(files) == 2
  assert sum(info.shard_examples) == info.num_examples
  counted = [int(tf.data.TFRecordDataset(path).reduce(
      tf.constant(0, tf.int64), lambda count, _: count + 1)) for path in files]
  assert info.shard_examples == counted
  assert pretraining_dataloader.record_counts(files) == counted


def test_the_stream_from_any_record_is_the_uninterrupted_stream_read_that_far(
    pretraining_data, monkeypatch):
  files = _files(pretraining_data)
  per_epoch = sum(pretraining_dataloader.record_counts(files))
  uninterrupted = pretraining_dataloader.record_stream(files, _SEED, _BUFFER)
  records_read = tf.Variable(0, dtype=tf.int64)
  # Inside the first epoch, at an epoch boundary, and some epochs later
  # (the independent route reads every record up to there).
  for start in (5, per_epoch, 3 * per_epoch + 17, 40_003):
    with monkeypatch.context() as patch:
      patch.setattr(tf.data, "TFRecordDataset",
                    _counting_reader(records_read))
      resumed = pretraining_dataloader.record_stream(
          files, _SEED, _BUFFER, skip_records=start)
    records_read.assign(0)
    resumed_records = _records(resumed, 6)
    # Only the current epoch's records before the start were read (a stream
    # that read from the first record and skipped would read `start`); at
    # least those given were counted, so the count is of this stream's reads.
    assert 6 <= int(records_read) <= start % per_epoch + 6 + _READ_AHEAD, (
        start, int(records_read))
    assert resumed_records == _records(uninterrupted.skip(start), 6), start
  # Each epoch reads every record once (the corpus repeats some), in another
  # order than the last.
  first, second = (_records(uninterrupted.skip(e * per_epoch), per_epoch)
                   for e in (0, 1))
  every_record = sorted(record.numpy() for path in files
                        for record in tf.data.TFRecordDataset(path))
  assert sorted(first) == sorted(second) == every_record
  assert first != second


def _forge_step(model_dir, step):
  """A copy of the latest checkpoint whose step counter reads `step`."""
  reader = tf.train.load_checkpoint(str(model_dir))
  names = sorted(reader.get_variable_to_shape_map())
  values = []
  for name in names:
    value = reader.get_tensor(name)
    if name == "optimizer/_iterations/.ATTRIBUTES/VARIABLE_VALUE":
      value = np.asarray(step, value.dtype)
    values.append(tf.constant(value))
  prefix = str(model_dir / f"ckpt-{step}")
  tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names,
                    shape_and_slices=[""] * len(names), tensors=values)
  tf.compat.v1.train.update_checkpoint_state(str(model_dir), prefix)


def test_a_run_restored_at_step_one_million_resumes_on_the_stream(
    tmp_path, pretraining_data, monkeypatch):
  step = 1_000_000
  settings = dict(train_batch_size=4, shuffle_buffer_size=_BUFFER, seed=_SEED)
  tiny_pretraining.train(tmp_path, pretraining_data, num_train_steps=1,
                         **settings)
  _forge_step(tmp_path, step)
  files = _files(pretraining_data)
  per_epoch = sum(pretraining_dataloader.record_counts(files))
  records_read = tf.Variable(0, dtype=tf.int64)
  with monkeypatch.context() as patch:
    patch.setattr(tf.data, "TFRecordDataset", _counting_reader(records_read))
    result = tiny_pretraining.train(tmp_path, pretraining_data,
                                    num_train_steps=step + 2,
                                    num_warmup_steps=0, **settings)
  assert result["step"] == step + 2
  # The run read the records of the current epoch before its step, its two
  # batches and what it prefetched: not the 4,000,000 records trained on.
  assert 2 * 4 <= int(records_read) <= (
      step * 4 % per_epoch + 2 * 4 + _READ_AHEAD), int(records_read)
  with open(tmp_path / callbacks.METRICS_LOG_FILE) as log_file:
    records = [json.loads(line) for line in log_file]
  assert [record["step"] for record in records] == [1, step + 1, step + 2]
  assert all(np.isfinite(record["loss"]) for record in records)
  # The batch the resumed run starts on: the records after 4,000,000 of
  # them, i.e. epoch 4,000,000 // n at 4,000,000 % n (by hand here).
  epoch, offset = divmod(step * 4, per_epoch)
  expected = _records(pretraining_dataloader._epoch_records(  # pylint: disable=protected-access
      files, epoch, _SEED, _BUFFER).concatenate(
          pretraining_dataloader._epoch_records(  # pylint: disable=protected-access
              files, epoch + 1, _SEED, _BUFFER)).skip(offset), 4)
  dataset = resumable_input.make_dataset_fn(
      str(pretraining_data[0]), 4, tiny_pretraining.SEQ_LENGTH,
      pretraining_data[2], _SEED, step, 1, _BUFFER)(
          tf.distribute.InputContext())
  batch = next(iter(dataset))
  parsed = tf.io.parse_example(
      expected, {"input_ids": tf.io.FixedLenFeature(
          [tiny_pretraining.SEQ_LENGTH], tf.int64)})
  np.testing.assert_array_equal(batch["input_word_ids"].numpy(),
                                parsed["input_ids"].numpy())
