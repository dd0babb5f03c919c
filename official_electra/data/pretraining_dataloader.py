"""The tf.data input pipeline of ELECTRA pretraining.

Reads the TFRecords of `tfrecords_tools.build_pretraining_dataset` (or of the
original ELECTRA tool), checks them against the model before training starts
(`pretraining_files`), and yields batches of model inputs. The stream of
records is a pure function of the seed (`record_stream`), which is how a
resumed run finds its place again (`training/resumable_input.py` skips to
it; `Model.fit`'s own iterator cannot be checkpointed). The dataset has no
`py_function`, so `tf.train.Checkpoint(iterator=iter(dataset))` can also save
and restore its position in a user's own loop.
"""

import os
from typing import Optional, Sequence, Union

from absl import logging
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_features
from official_electra.data import pretraining_files

PretrainingDataError = pretraining_files.PretrainingDataError
_MAX_CYCLE_LENGTH = 8
_NO_END = 2 ** 62


def record_counts(files: Sequence[str]) -> list:
  """The records in each file: from `dataset_info.json`'s `shard_examples`
  where the build recorded them, else counted (one read of the file)."""
  counts = {}
  for directory in sorted({os.path.dirname(path) for path in files}):
    info = dataset_info_lib.read_dataset_info(directory)
    if info is not None and info.shard_examples:
      for name, count in zip(info.shard_files, info.shard_examples):
        counts[os.path.join(directory, name)] = int(count)
  missing = [path for path in files if path not in counts]
  if missing:
    logging.info("counting the records of %d files (their dataset_info.json "
                 "does not list them)", len(missing))
  for path in missing:
    counts[path] = int(tf.data.TFRecordDataset(path).reduce(
        tf.constant(0, tf.int64), lambda count, _: count + 1))
  return [counts[path] for path in files]


def _epoch_records(files, epoch, seed, shuffle_buffer_size):
  """The raw records of one pass over `files`: the files in an order drawn
  for (seed, epoch), interleaved, then each window of `shuffle_buffer_size`
  consecutive records permuted by keys drawn for (seed, epoch, window).

  Stateless throughout (no `Dataset.shuffle`, whose seed cannot be a tensor
  under a global seed): the same epoch gives the same records wherever the
  stream is entered.
  """
  seeds = tf.stack([tf.constant(seed, tf.int64), tf.cast(epoch, tf.int64)])
  order = tf.random.experimental.stateless_shuffle(tf.range(len(files)),
                                                   seed=seeds)
  records = tf.data.Dataset.from_tensor_slices(
      tf.gather(tf.constant(files), order)).interleave(
          tf.data.TFRecordDataset,
          cycle_length=min(len(files), _MAX_CYCLE_LENGTH), block_length=1,
          num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)

  def permuted(window_index, window):
    keys = tf.random.stateless_uniform(
        tf.shape(window), seed=tf.random.experimental.stateless_fold_in(
            seeds, window_index))
    return tf.gather(window, tf.argsort(keys))

  return records.batch(shuffle_buffer_size).enumerate().map(
      permuted, num_parallel_calls=tf.data.AUTOTUNE,
      deterministic=True).unbatch()


def record_stream(files: Sequence[str], seed: int, shuffle_buffer_size: int,
                  skip_records: int = 0) -> tf.data.Dataset:
  """The endless training stream of raw records, from record `skip_records`.

  Epoch e is a pass over every file (`_epoch_records`): its file order and
  the permutation of each window of `shuffle_buffer_size` records are drawn
  for (seed, e) alone. So the stream from any record is known by arithmetic:
  whole epochs are skipped by their record counts (`record_counts`), and only
  the records of the first epoch before the start are read (raw bytes, never
  parsed), which costs at most one epoch's read whatever the step.

  Args:
    files: the record files of this input pipeline.
    seed: the stream's seed.
    shuffle_buffer_size: records in each shuffled window.
    skip_records: records of the stream already consumed.

  Returns:
    An endless `tf.data.Dataset` of serialized records.
  """
  per_epoch = sum(record_counts(files))
  if not per_epoch:
    raise PretrainingDataError(
        f"{os.path.commonpath(files)}: no records in {len(files)} files: "
        "rebuild the data")
  first_epoch, offset = divmod(skip_records, per_epoch)
  rest = tf.data.Dataset.range(first_epoch + 1, _NO_END).flat_map(
      lambda epoch: _epoch_records(files, epoch, seed, shuffle_buffer_size))
  return _epoch_records(files, first_epoch, seed,
                        shuffle_buffer_size).skip(offset).concatenate(rest)


def pretraining_dataset(
    file_pattern: Union[str, Sequence[str]], global_batch_size: int,
    max_seq_length: int, vocab_size: Optional[int] = None,
    input_context: Optional[tf.distribute.InputContext] = None,
    shuffle_buffer_size: int = 10000, seed: Optional[int] = None,
    repeat: bool = True, shuffle: bool = True,
    vocab_file: Optional[str] = None,
    verify_checksums: bool = False,
    skip_batches: int = 0) -> tf.data.Dataset:
  """Batches of pretraining inputs.

  Files are split between input pipelines (`input_context`). Training
  (`repeat` and `shuffle`, with a `seed`) reads `record_stream`: epochs of
  reshuffled files and records (each window of `shuffle_buffer_size`
  records permuted) whose every position is known by arithmetic, so
  `skip_batches` costs at most one epoch's raw read. Otherwise files are
  shuffled (`shuffle`), interleaved, records shuffled, and read once or
  forever (`repeat`). Then records are batched (incomplete batches dropped)
  and parsed.

  Args:
    file_pattern: see `pretraining_files.resolve_files`.
    global_batch_size: examples per step over all replicas.
    max_seq_length: the model's sequence length; must be the records'.
    vocab_size: the model's vocabulary size, checked against the data's;
      None skips the check.
    input_context: from `strategy.distribute_datasets_from_function`; the
      batch is then per replica.
    shuffle_buffer_size: records in the shuffle buffer (a training stream
      permutes each window of this many records).
    seed: seed of file and record shuffling; with it the order is repeatable.
    repeat: cycle forever (training) or read once (evaluation).
    shuffle: shuffle files and records.
    vocab_file: the model's vocabulary, checked to be the one the data was
      built with (see `pretraining_files.check_files`); None skips the
      check.
    verify_checksums: also compare every shard's sha256 with
      `dataset_info.json` (reads the data once; see
      `pretraining_files.check_files`).
    skip_batches: batches of this pipeline already consumed (a resumed run);
      training streams only.

  Returns:
    A dataset of dicts `input_word_ids`, `input_mask`, `input_type_ids`:
    int32 `[batch, max_seq_length]`.

  Raises:
    PretrainingDataError, DatasetInfoError, VocabularyError: missing files,
      files that do not fit the model, another vocabulary, a missing,
      resized, corrupt (verified) or unlisted shard, an unfinished build, or
      too few files to shard.
  """
  files = pretraining_files.resolve_files(file_pattern)
  pretraining_files.check_files(files, max_seq_length, vocab_size, vocab_file,
              verify_checksums)
  batch_size = global_batch_size
  dataset = tf.data.Dataset.from_tensor_slices(files)
  pipeline_files = list(files)
  if input_context is not None:
    batch_size = input_context.get_per_replica_batch_size(global_batch_size)
    if input_context.num_input_pipelines > 1:
      if len(files) < input_context.num_input_pipelines:
        raise PretrainingDataError(
            f"{len(files)} files for {input_context.num_input_pipelines} "
            "input pipelines: rebuild the data with --num_shards of at least "
            "the number of input pipelines")
      dataset = dataset.shard(input_context.num_input_pipelines,
                              input_context.input_pipeline_id)
      pipeline_files = pipeline_files[
          input_context.input_pipeline_id::input_context.num_input_pipelines]
  if repeat and shuffle and seed is not None:
    dataset = record_stream(pipeline_files, seed, shuffle_buffer_size,
                            skip_records=skip_batches * batch_size)
  else:
    if skip_batches:
      raise ValueError("skip_batches needs a seeded, repeated, shuffled "
                       "training stream")
    if shuffle:
      dataset = dataset.shuffle(len(files), seed=seed)
    if repeat:
      dataset = dataset.repeat()
    dataset = dataset.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), _MAX_CYCLE_LENGTH),
        num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    if shuffle:
      dataset = dataset.shuffle(shuffle_buffer_size, seed=seed)
  dataset = dataset.batch(batch_size, drop_remainder=True)
  dataset = dataset.map(
      lambda records: pretraining_features.parse_examples(records,
                                                          max_seq_length),
      num_parallel_calls=tf.data.AUTOTUNE)
  return dataset.prefetch(tf.data.AUTOTUNE)
