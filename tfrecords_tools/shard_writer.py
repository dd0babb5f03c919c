"""Atomic, resumable shard files of one dataset build.

A shard is written as `NAME.tmp`; when its last record is in, its counts and
sha256 go to `.build_state/NAME.json` (with the build's fingerprint), then
`NAME.tmp` is renamed to `NAME`. A shard is complete when both exist and the
fingerprint matches, so a rerun of the same build skips it; nothing else looks
complete.
"""

import json
import os
import shutil

import numpy as np
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from tfrecords_tools.errors import BuildError

SHARD_PREFIX = "pretrain_data.tfrecord"
_STATE_DIRECTORY = ".build_state"
TEMPORARY_SUFFIX = ".tmp"


def _parse_ids_and_mask(records):
  features = tf.io.parse_example(records, {
      name: tf.io.VarLenFeature(tf.int64) for name in ("input_ids",
                                                       "input_mask")})
  return (tf.sparse.to_dense(features["input_ids"]),
          tf.sparse.to_dense(features["input_mask"]))


def shard_name(shard: int, num_shards: int) -> str:
  """`pretrain_data.tfrecord-00003-of-00016`."""
  return f"{SHARD_PREFIX}-{shard:05d}-of-{num_shards:05d}"


class ShardSet:
  """The shards of one build in `output_dir`."""

  def __init__(self, output_dir: str, num_shards: int, fingerprint: str):
    self._output_dir = output_dir
    self._num_shards = num_shards
    self._fingerprint = fingerprint
    self._state_dir = os.path.join(output_dir, _STATE_DIRECTORY)
    os.makedirs(self._state_dir, exist_ok=True)

  def path(self, shard: int) -> str:
    return os.path.join(self._output_dir, shard_name(shard, self._num_shards))

  def _state_path(self, shard: int) -> str:
    return os.path.join(self._state_dir,
                        shard_name(shard, self._num_shards) + ".json")

  def _read_state(self, shard: int) -> dict:
    try:
      with open(self._state_path(shard), encoding="utf-8") as state_file:
        return json.load(state_file)
    except (OSError, ValueError):
      return {}

  def completed_counts(self, shard: int):
    """The saved counts of a complete shard of this build, else None.

    Raises:
      BuildError: the shard is from another build (other inputs or flags).
    """
    if not os.path.exists(self.path(shard)):
      return None
    state = self._read_state(shard)
    if state.get("fingerprint") != self._fingerprint:
      raise BuildError(
          f"{self.path(shard)} is from a different build (other inputs, "
          "vocabulary or flags): use an empty --output_dir or delete the old "
          "shards")
    return state["counts"]

  def sha256(self, shard: int) -> str:
    """The complete shard's sha256 (recorded when it was written)."""
    return (self._read_state(shard).get("sha256")
            or dataset_info_lib.file_sha256(self.path(shard)))

  def token_counts(self, shard: int, vocab_size: int):
    """The complete shard's token counts (int64 `[vocab_size]`): recorded
    when it was written, else counted from its records."""
    recorded = self._read_state(shard).get("token_counts")
    if recorded is not None:
      return np.asarray(recorded, np.int64)
    counts = np.zeros([vocab_size], np.int64)
    for batch in tf.data.TFRecordDataset(self.path(shard)).batch(1024).map(
        _parse_ids_and_mask):
      counts += np.bincount(batch[0].numpy()[batch[1].numpy() == 1],
                            minlength=vocab_size)
    return counts

  def open(self, shard: int) -> tf.io.TFRecordWriter:
    """A writer of the shard's temporary file (any stale one is replaced)."""
    return tf.io.TFRecordWriter(self.path(shard) + TEMPORARY_SUFFIX)

  def complete(self, shard: int, writer: tf.io.TFRecordWriter,
               counts: dict, token_counts=None) -> None:
    """Closes the writer, saves the counts and the file's sha256, and renames
    the shard in place."""
    writer.close()
    checksum = dataset_info_lib.file_sha256(self.path(shard) +
                                            TEMPORARY_SUFFIX)
    state_path = self._state_path(shard)
    with open(state_path + TEMPORARY_SUFFIX, "w", encoding="utf-8") as state:
      json.dump({"fingerprint": self._fingerprint, "counts": counts,
                 "sha256": checksum,
                 "token_counts": (None if token_counts is None else
                                  [int(n) for n in token_counts])}, state)
    os.replace(state_path + TEMPORARY_SUFFIX, state_path)
    os.replace(self.path(shard) + TEMPORARY_SUFFIX, self.path(shard))

  def remove_state(self) -> None:
    """Drops the resume state once dataset_info.json is written."""
    shutil.rmtree(self._state_dir, ignore_errors=True)

  def remove_all(self) -> None:
    """Removes every shard of this build and the state (an empty corpus)."""
    for shard in range(self._num_shards):
      for path in (self.path(shard), self.path(shard) + TEMPORARY_SUFFIX):
        if os.path.exists(path):
          os.remove(path)
    self.remove_state()
