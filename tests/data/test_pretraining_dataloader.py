"""Tests of pretraining_dataset: batches, sharding, checks, checkpointing."""

import logging
import re

import numpy as np
import pytest
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.data import pretraining_features

_SEQ = 8
_VOCAB = 50


def _write_shards(directory, num_shards=4, per_shard=10, with_info=True,
                  seq_length=_SEQ):
  """Shards whose example k has input_ids all equal to a unique 5 + k."""
  directory.mkdir(parents=True, exist_ok=True)
  names, sizes, value = [], [], 5
  for shard in range(num_shards):
    name = f"pretrain_data.tfrecord-{shard:05d}-of-{num_shards:05d}"
    ids = np.arange(value, value + per_shard)[:, None] * np.ones(
        seq_length, np.int64)
    value += per_shard
    records = pretraining_features.serialize_examples(
        ids, np.ones_like(ids), np.zeros_like(ids))
    with tf.io.TFRecordWriter(str(directory / name)) as writer:
      for record in records:
        writer.write(record)
    names.append(name)
    sizes.append((directory / name).stat().st_size)
  if with_info:
    dataset_info_lib.DatasetInfo(
        vocab_sha256="0" * 64, vocab_size=_VOCAB, lower_case=True,
        max_seq_length=seq_length, special_token_ids={}, seed=0,
        shard_files=names, shard_sizes=sizes, num_documents=1, num_tokens=1,
        num_truncated_tokens=0, num_examples=num_shards * per_shard
    ).write(str(directory))
  return directory


def _first_ids(batch):
  return batch["input_word_ids"][:, 0].numpy().tolist()


def test_batches_have_model_inputs_and_cover_the_data_once(tmp_path):
  directory = _write_shards(tmp_path / "data")
  dataset = pretraining_dataloader.pretraining_dataset(
      str(directory), global_batch_size=6, max_seq_length=_SEQ,
      vocab_size=_VOCAB, seed=1, repeat=False)
  batches = list(dataset)
  assert len(batches) == 40 // 6  # The remainder is dropped.
  for batch in batches:
    assert set(batch) == {"input_word_ids", "input_mask", "input_type_ids"}
    assert all(t.dtype == tf.int32 and t.shape == (6, _SEQ)
               for t in batch.values())
  seen = [v for batch in batches for v in _first_ids(batch)]
  assert len(set(seen)) == len(seen) and set(seen) <= set(range(5, 45))
  assert seen != sorted(seen)  # Shuffled.


def test_input_context_shards_files_and_splits_the_batch(tmp_path):
  directory = _write_shards(tmp_path / "data")
  seen = []
  for pipeline in range(2):
    context = tf.distribute.InputContext(
        num_input_pipelines=2, input_pipeline_id=pipeline,
        num_replicas_in_sync=2)
    dataset = pretraining_dataloader.pretraining_dataset(
        str(directory / "pretrain_data.tfrecord-*"), global_batch_size=8,
        max_seq_length=_SEQ, input_context=context, repeat=False)
    batches = list(dataset)
    assert all(b["input_word_ids"].shape == (4, _SEQ) for b in batches)
    seen.append({v for b in batches for v in _first_ids(b)})
  assert not seen[0] & seen[1]
  assert len(seen[0] | seen[1]) == 40


def test_same_seed_same_order_and_checkpoint_resumes_exactly(tmp_path):
  directory = _write_shards(tmp_path / "data")
  make = lambda: pretraining_dataloader.pretraining_dataset(
      str(directory), global_batch_size=4, max_seq_length=_SEQ, seed=7,
      shuffle_buffer_size=16)
  iterator = iter(make())
  for _ in range(3):
    next(iterator)
  checkpoint = tf.train.Checkpoint(iterator=iterator)
  path = checkpoint.save(str(tmp_path / "ckpt" / "it"))
  expected = [_first_ids(next(iterator)) for _ in range(12)]
  restored = iter(make())
  tf.train.Checkpoint(iterator=restored).restore(path)
  assert [_first_ids(next(restored)) for _ in range(12)] == expected
  fresh = iter(make())
  assert [_first_ids(next(fresh)) for _ in range(15)][3:] == expected


def test_mismatched_vocabulary_or_length_fails_before_training(tmp_path):
  directory = _write_shards(tmp_path / "data")
  with pytest.raises(dataset_info_lib.DatasetInfoError, match="vocab_size=99"):
    pretraining_dataloader.pretraining_dataset(
        str(directory), 4, max_seq_length=_SEQ, vocab_size=99)
  with pytest.raises(dataset_info_lib.DatasetInfoError,
                     match="max_seq_length=16"):
    pretraining_dataloader.pretraining_dataset(
        str(directory), 4, max_seq_length=16, vocab_size=_VOCAB)


def test_original_tool_records_are_checked_on_the_first_record(tmp_path):
  directory = _write_shards(tmp_path / "original", with_info=False)
  dataset = pretraining_dataloader.pretraining_dataset(
      str(directory), 4, max_seq_length=_SEQ, vocab_size=_VOCAB, repeat=False)
  assert len(list(dataset)) == 10
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match=r"feature lengths .*max_seq_length=16"):
    pretraining_dataloader.pretraining_dataset(str(directory), 4, 16)
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="token id 5, outside the model.s vocab_size=5"):
    pretraining_dataloader.pretraining_dataset(str(directory), 4, _SEQ,
                                               vocab_size=5)


def test_missing_truncated_and_corrupt_files_are_named(tmp_path):
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="no pretraining files match"):
    pretraining_dataloader.pretraining_dataset(str(tmp_path / "x*"), 4, _SEQ)
  directory = _write_shards(tmp_path / "data")
  shard = directory / "pretrain_data.tfrecord-00002-of-00004"
  shard.write_bytes(shard.read_bytes()[:-10])
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match=r"00002-of-00004 has \d+ bytes.*truncated"):
    pretraining_dataloader.pretraining_dataset(str(directory), 4, _SEQ)
  files = pretraining_files.resolve_files(str(directory))
  assert pretraining_files.find_unreadable_file(files) == str(shard)
  (directory / "pretrain_data.tfrecord-00009.tmp").write_bytes(b"partial")
  assert len(pretraining_files.resolve_files(str(directory))) == 4


def test_a_glob_over_the_folder_skips_the_builds_side_files(tmp_path,
                                                            caplog):
  # `--train_data='data/*'`, as the original README writes it, also matches
  # the build's dataset_info.json and token_counts.txt.
  directory = _write_shards(tmp_path / "data")
  dataset_info_lib.write_token_counts(str(directory), [1] * _VOCAB)
  # absl's logger has its own level (a program run in-process may have
  # lowered its verbosity), so it is the one set here.
  with caplog.at_level(logging.INFO, logger="absl"):
    dataset = pretraining_dataloader.pretraining_dataset(
        str(directory / "*"), 4, _SEQ, vocab_size=_VOCAB, seed=1)
    assert next(iter(dataset))["input_word_ids"].shape == (4, _SEQ)
    files = pretraining_files.resolve_files(str(directory / "*"))
  assert files == pretraining_files.resolve_files(str(directory))
  skipped = [record.getMessage() for record in caplog.records
             if "skipping" in record.getMessage()]
  assert len(skipped) == 1, skipped
  assert "dataset_info.json" in skipped[0]
  assert "token_counts.txt" in skipped[0]


def test_tfrecord_files_of_any_name_are_read(tmp_path):
  directory = _write_shards(tmp_path / "records", with_info=False)
  for shard, path in enumerate(sorted(directory.iterdir())):
    path.rename(directory / f"part-{shard}.tfrecord")
  (directory / "part-9.tfrecord").write_bytes(b"")  # No records.
  assert len(pretraining_files.resolve_files(str(directory / "*"))) == 5
  dataset = pretraining_dataloader.pretraining_dataset(
      str(directory / "*"), 4, _SEQ, vocab_size=_VOCAB, repeat=False)
  assert len(list(dataset)) == 10


@pytest.mark.parametrize("with_info", [True, False])
@pytest.mark.parametrize("name,content", [
    ("notes.txt", b"how this data was made: see the wiki\n"),
    ("short.txt", b"x\n"),
    ("config.json", b'{"max_seq_length": 8}'),
    ("old_run", None)])
def test_a_matched_file_that_is_not_a_record_is_refused_by_name(
    tmp_path, with_info, name, content):
  directory = _write_shards(tmp_path / "data", with_info=with_info)
  stray = directory / name
  if content is None:
    stray.mkdir()
  else:
    stray.write_bytes(content)
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match=f"^{re.escape(str(stray))} is not a TFRecord "
                           r"file.*: narrow the pattern"):
    pretraining_dataloader.pretraining_dataset(str(directory / "*"), 4, _SEQ,
                                               repeat=False)


def test_too_few_files_for_the_input_pipelines(tmp_path):
  directory = _write_shards(tmp_path / "data", num_shards=2)
  context = tf.distribute.InputContext(num_input_pipelines=3,
                                       input_pipeline_id=0)
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="2 files for 3 input pipelines"):
    pretraining_dataloader.pretraining_dataset(
        str(directory), 6, _SEQ, input_context=context)
