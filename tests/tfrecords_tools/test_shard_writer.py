"""Tests of shard_writer: round-robin dealing against the original tool's
`ExampleWriter`, the rotation, commits, resuming and repairs."""

import os
import random

import pytest
import tensorflow as tf

from tests.tfrecords_tools import shard_layouts
from tfrecords_tools import shard_writer
from tfrecords_tools.errors import BuildError

_NUM_SHARDS = 5
_RECORDS = [f"example {i} ".encode() * (1 + i % 7) for i in range(103)]
# A stand-in corpus: record i comes from a unit at byte 10 * i.
_TOTAL_BYTES = 10 * len(_RECORDS)


def _shard_set(output_dir, targets=None, fingerprint="f"):
  return shard_writer.ShardSet(str(output_dir), _NUM_SHARDS, fingerprint,
                               _TOTAL_BYTES, targets)


def _add(shards, start, end):
  """Adds records `start:end`, each as a unit of its own."""
  for index in range(start, end):
    shards.add(_RECORDS[index:index + 1], 10 * index)


def _write(output_dir, chunk_seed, targets=None):
  """Adds the records in random chunks with commits at random points, then
  finishes the build; returns the shard set."""
  shards = _shard_set(output_dir, targets)
  assert shards.resume() is None
  rng = random.Random(chunk_seed)
  start = 0
  while start < len(_RECORDS):
    size = rng.randint(0, 9)
    _add(shards, start, min(start + size, len(_RECORDS)))
    start += size
    if rng.random() < 0.3:
      shards.commit({"next": start})
  shards.commit({"next": len(_RECORDS)}, final=True)
  shards.assemble()
  return shards


def _shard_records(shards, shard):
  return [record.numpy() for record in
          tf.data.TFRecordDataset(shards.path(shard))]


def _shard_bytes(output_dir):
  return {path.name: path.read_bytes() for path in
          sorted(output_dir.glob(f"{shard_writer.SHARD_PREFIX}-*"))}


def test_tfrecord_bytes_are_what_a_tfrecord_writer_writes(tmp_path):
  path = str(tmp_path / "records")
  with tf.io.TFRecordWriter(path) as writer:
    for record in _RECORDS:
      writer.write(record)
  framed = shard_writer.tfrecord_bytes(_RECORDS[:40]) + (
      shard_writer.tfrecord_bytes(_RECORDS[40:]))
  assert framed == (tmp_path / "records").read_bytes()
  assert shard_writer.tfrecord_bytes([]) == b""


def test_shards_are_the_original_files_rotated(tmp_path):
  original = shard_layouts.original_files(_RECORDS, _NUM_SHARDS)
  expected = shard_layouts.rotated_files(
      _RECORDS, [10 * i for i in range(len(_RECORDS))], _TOTAL_BYTES,
      _NUM_SHARDS)
  shards = _write(tmp_path / "a", chunk_seed=0)
  for shard in range(_NUM_SHARDS):
    assert _shard_records(shards, shard) == expected[shard]
    assert sorted(expected[shard]) == sorted(original[shard])
  # Shard k starts with the original's first example from the k-th fifth.
  assert [expected[shard][0] for shard in range(_NUM_SHARDS)] == [
      _RECORDS[i] for i in (0, 21, 42, 63, 84)]
  assert shards.shard_examples == [len(original[s])
                                   for s in range(_NUM_SHARDS)]
  assert not list((tmp_path / "a").glob("*.tmp"))
  # Where the chunks and commits fall changes no byte.
  _write(tmp_path / "b", chunk_seed=1)
  assert _shard_bytes(tmp_path / "a") == _shard_bytes(tmp_path / "b")


def test_a_repair_writes_only_its_targets_to_the_same_bytes(tmp_path):
  _write(tmp_path / "all", chunk_seed=0)
  repair = _write(tmp_path / "repair", chunk_seed=2, targets=[1, 3])
  everything = _shard_bytes(tmp_path / "all")
  assert _shard_bytes(tmp_path / "repair") == {
      shard_writer.shard_name(s, _NUM_SHARDS):
          everything[shard_writer.shard_name(s, _NUM_SHARDS)] for s in (1, 3)}
  assert repair.shard_examples == [21, 21, 21, 20, 20]


def test_resume_goes_on_after_the_last_commit(tmp_path):
  """A kill in a commit or in the assembly leaves bytes beyond the committed
  lengths; they go."""
  _write(tmp_path / "uninterrupted", chunk_seed=0)
  output_dir = tmp_path / "killed"
  shards = _shard_set(output_dir)
  shards.resume()
  _add(shards, 0, 37)
  shards.commit({"next": 37})
  _add(shards, 37, 60)
  shards.commit({"next": 60})
  # The next commit reaches the parts but not the state.
  _add(shards, 60, 80)
  state_path = output_dir / ".build_state" / "state.json"
  committed_state = state_path.read_bytes()
  shards.commit({"next": 80})
  state_path.write_bytes(committed_state)

  resumed = _shard_set(output_dir)
  assert resumed.resume() == {"next": 60}
  assert resumed.shard_examples == [12, 12, 12, 12, 12]
  assert not resumed.finished_writing
  _add(resumed, 60, len(_RECORDS))
  resumed.commit({"next": len(_RECORDS)}, final=True)
  # A kill in the assembly: shard 0 renamed, shard 1's tail half appended.
  head = shards.path(1) + ".tmp"
  with open(head, "ab") as head_file:
    head_file.write((output_dir / f"{shard_writer.shard_name(1, 5)}.tail.tmp"
                     ).read_bytes()[:25])
  os.replace(shards.path(0) + ".tmp", shards.path(0))

  again = _shard_set(output_dir)
  assert again.resume() == {"next": len(_RECORDS)}
  assert again.finished_writing
  again.assemble()
  assert _shard_bytes(output_dir) == _shard_bytes(tmp_path / "uninterrupted")
  assert not list(output_dir.glob("*.tmp"))


def test_resume_goes_on_from_an_earlier_fingerprint_of_the_same_build(
    tmp_path):
  shards = _shard_set(tmp_path, fingerprint="earlier")
  shards.resume()
  _add(shards, 0, len(_RECORDS) // 2)
  shards.commit({"next": len(_RECORDS) // 2})
  again = shard_writer.ShardSet(str(tmp_path), _NUM_SHARDS, "f",
                                _TOTAL_BYTES, earlier_fingerprints={"earlier"})
  assert again.resume() == {"next": len(_RECORDS) // 2}
  with pytest.raises(BuildError, match="unfinished build with other inputs"):
    shard_writer.ShardSet(str(tmp_path), _NUM_SHARDS, "f", _TOTAL_BYTES,
                          earlier_fingerprints={"other"}).resume()


def test_resume_refuses_another_build(tmp_path):
  shards = _shard_set(tmp_path)
  shards.resume()
  _add(shards, 0, len(_RECORDS))
  shards.commit({})
  with pytest.raises(BuildError, match="unfinished build with other inputs"):
    _shard_set(tmp_path, fingerprint="g").resume()
  shards.commit({}, final=True)
  shards.assemble()
  shards.remove_state()
  with pytest.raises(BuildError, match="from a different build"):
    _shard_set(tmp_path).resume()
