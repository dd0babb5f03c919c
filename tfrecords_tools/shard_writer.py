"""Round-robin shard files of one dataset build, atomic and resumable.

Dealing: the build's examples, in corpus order, go to the shards in turn:
example i to shard `i % num_shards`, as the original ELECTRA tool's
`ExampleWriter.write_examples` (google-research/electra,
build_pretraining_dataset.py) does with one job. So every shard holds a
uniform sample of the whole corpus.

Rotation: shard k starts with its examples from the units that start at or
after byte `k * total_bytes // num_shards` of the corpus, in order, and then
wraps around to its examples from before that point. (The original's shards
all start at the beginning of the corpus: a reader that reads 8 of them side
by side, as `pretraining_dataloader` does, then reads one region of the
corpus at a time. Rotated, the 8 are at 8 places of it.)

Files: each shard is written as two parts, `NAME.tmp` (from its rotation
point on) and `NAME.tail.tmp` (before it); once the whole corpus is in, the
tail is appended to `NAME.tmp`, which is renamed to `NAME`, so a final name is
never on a partial file. Nothing is final before the end: every shard takes
examples to the last one.

Commits: records are buffered in memory and appended to the parts in commits;
after each, `.build_state/state.json` (written through a temporary file and a
rename) records the build's fingerprint, every part's length, the records
dealt to each shard and the caller's progress (where in the corpus it is, its
counts). A rerun of the same build truncates the parts to the last commit's
lengths (a commit or an append cut short by a kill leaves bytes beyond them)
and goes on from there, so the bytes do not depend on where the commits fall,
nor on a kill.

A repair writes only some shards (`targets`) but deals every example, so its
shards are those of the original build.
"""

import json
import os
import shutil
from typing import Iterable, Optional, Sequence

import tensorflow as tf

from tfrecords_tools.errors import BuildError

SHARD_PREFIX = "pretrain_data.tfrecord"
TEMPORARY_SUFFIX = ".tmp"
_TAIL_SUFFIX = ".tail" + TEMPORARY_SUFFIX
_HEAD, _TAIL = 0, 1
_STATE_DIRECTORY = ".build_state"
_STATE_FILENAME = "state.json"
# An in-memory file of TensorFlow's, where records get their TFRecord framing.
_FRAMING_PATH = "ram://tfrecords_tools_shard_writer_framing"


def shard_name(shard: int, num_shards: int) -> str:
  """`pretrain_data.tfrecord-00003-of-00016`."""
  return f"{SHARD_PREFIX}-{shard:05d}-of-{num_shards:05d}"


def rotation_points(total_bytes: int, num_shards: int) -> list:
  """The corpus byte offset where each shard starts (see the module)."""
  return [shard * total_bytes // num_shards for shard in range(num_shards)]


def tfrecord_bytes(records: Sequence[bytes]) -> bytes:
  """What `tf.io.TFRecordWriter` writes for `records`: each one framed by its
  length and CRCs, with no file header, so these bytes appended to a TFRecord
  file continue it."""
  with tf.io.TFRecordWriter(_FRAMING_PATH) as writer:
    for record in records:
      writer.write(record)
  with tf.io.gfile.GFile(_FRAMING_PATH, "rb") as framed:
    data = framed.read()
  tf.io.gfile.remove(_FRAMING_PATH)
  return data


class ShardSet:
  """The rotated round-robin shards of one build; see the module."""

  def __init__(self, output_dir: str, num_shards: int, fingerprint: str,
               total_bytes: int, targets: Optional[Iterable[int]] = None,
               earlier_fingerprints: Iterable[str] = ()):
    """Args: the directory, the shard count, the build's fingerprint, the
    corpus's bytes, the shards to write (default: all; a repair writes
    the damaged ones), and other fingerprints that name this same build (an
    earlier version's), whose unfinished state `resume` goes on from."""
    self._output_dir = output_dir
    self._num_shards = num_shards
    self._fingerprint = fingerprint
    self._same_build = {fingerprint, *earlier_fingerprints}
    self._rotation_points = rotation_points(total_bytes, num_shards)
    self._targets = sorted(range(num_shards) if targets is None else targets)
    self._state_dir = os.path.join(output_dir, _STATE_DIRECTORY)
    self._state_path = os.path.join(self._state_dir, _STATE_FILENAME)
    self._shard_examples = [0] * num_shards
    self._part_bytes = {shard: [0, 0] for shard in self._targets}
    self._pending = {(shard, part): [] for shard in self._targets
                     for part in (_HEAD, _TAIL)}
    self._pending_bytes = 0
    self._finished_writing = False

  @property
  def finished_writing(self) -> bool:
    """Whether the final commit is in (only the assembly may be left)."""
    return self._finished_writing

  @property
  def shard_examples(self) -> list:
    """Examples dealt to each shard so far (written or, for a shard that is
    not a target, only counted)."""
    return list(self._shard_examples)

  @property
  def pending_bytes(self) -> int:
    """Bytes of records added since the last commit."""
    return self._pending_bytes

  def path(self, shard: int) -> str:
    return os.path.join(self._output_dir, shard_name(shard, self._num_shards))

  def _part_path(self, shard: int, part: int) -> str:
    return self.path(shard) + (TEMPORARY_SUFFIX if part == _HEAD
                               else _TAIL_SUFFIX)

  def _read_state(self) -> Optional[dict]:
    try:
      with open(self._state_path, encoding="utf-8") as state_file:
        return json.load(state_file)
    except (OSError, ValueError):
      return None

  def resume(self) -> Optional[dict]:
    """Starts the build, or goes on from this build's last commit.

    Returns:
      The `progress` of the last commit, or None: nothing of this build was
      committed (the targets' parts then start empty).

    Raises:
      BuildError: the directory holds shards or a state of another build.
    """
    state = self._read_state()
    if state is not None and state["fingerprint"] not in self._same_build:
      raise BuildError(
          f"{self._output_dir} holds an unfinished build with other inputs, "
          "vocabulary or flags: use an empty --output_dir or delete it")
    if state is None or state["targets"] != self._targets:
      if state is None and self._targets == list(range(self._num_shards)):
        self._refuse_foreign_shards()
      return self._start()
    for shard in self._targets:
      lengths = state["part_bytes"][str(shard)]
      paths = [self._part_path(shard, part) for part in (_HEAD, _TAIL)]
      if state["final"] and not os.path.exists(paths[_HEAD]):
        continue  # Assembled and renamed before the kill.
      if not all(os.path.exists(path) and os.path.getsize(path) >= length
                 for path, length in zip(paths, lengths)):
        return self._start()  # Damaged since: start over.
      for path, length in zip(paths, lengths):
        os.truncate(path, length)
      self._part_bytes[shard] = list(lengths)
    self._shard_examples = list(state["shard_examples"])
    self._finished_writing = state["final"]
    return state["progress"]

  def _refuse_foreign_shards(self) -> None:
    for shard in range(self._num_shards):
      if os.path.exists(self.path(shard)):
        raise BuildError(
            f"{self.path(shard)} is from a different build (an earlier "
            "version of this tool, or other inputs, vocabulary or flags): use "
            "an empty --output_dir or delete the old shards")

  def _start(self) -> None:
    os.makedirs(self._state_dir, exist_ok=True)
    for shard in range(self._num_shards):
      for part in (_HEAD, _TAIL):
        path = self._part_path(shard, part)
        if shard in self._part_bytes:
          with open(path, "wb"):
            pass
        elif os.path.exists(path):
          os.remove(path)

  def add(self, records: Sequence[bytes], corpus_offset: int) -> None:
    """Deals serialized examples, the next ones in corpus order, of the unit
    that starts at byte `corpus_offset` of the corpus."""
    shard = sum(self._shard_examples) % self._num_shards
    for record in records:
      self._shard_examples[shard] += 1
      if shard in self._part_bytes:
        part = (_HEAD if corpus_offset >= self._rotation_points[shard]
                else _TAIL)
        self._pending[shard, part].append(record)
        self._pending_bytes += len(record)
      shard = (shard + 1) % self._num_shards

  def commit(self, progress: dict, final: bool = False) -> None:
    """Appends the added records to the parts, then records them and
    `progress` (JSON-serializable) in the state; `final`: the last commit."""
    for (shard, part), records in self._pending.items():
      if records:
        data = tfrecord_bytes(records)
        with open(self._part_path(shard, part), "ab") as part_file:
          part_file.write(data)
        self._part_bytes[shard][part] += len(data)
        records.clear()
    self._pending_bytes = 0
    state = {"fingerprint": self._fingerprint, "targets": self._targets,
             "part_bytes": {str(shard): lengths for shard, lengths
                            in self._part_bytes.items()},
             "shard_examples": self._shard_examples, "progress": progress,
             "final": final}
    with open(self._state_path + TEMPORARY_SUFFIX, "w",
              encoding="utf-8") as state_file:
      json.dump(state, state_file)
    os.replace(self._state_path + TEMPORARY_SUFFIX, self._state_path)
    self._finished_writing = final

  def assemble(self) -> None:
    """After the final commit: appends each shard's tail to its head and
    gives it its final name."""
    for shard in self._targets:
      head, tail = (self._part_path(shard, part) for part in (_HEAD, _TAIL))
      if os.path.exists(head):
        with open(head, "ab") as head_file, open(tail, "rb") as tail_file:
          shutil.copyfileobj(tail_file, head_file)
        os.replace(head, self.path(shard))
      if os.path.exists(tail):
        os.remove(tail)

  def remove_state(self) -> None:
    """Drops the resume state once dataset_info.json is written."""
    shutil.rmtree(self._state_dir, ignore_errors=True)

  def remove_all(self) -> None:
    """Removes every shard of this build and the state (an empty corpus)."""
    for shard in range(self._num_shards):
      for path in (self.path(shard), self._part_path(shard, _HEAD),
                   self._part_path(shard, _TAIL)):
        if os.path.exists(path):
          os.remove(path)
    self.remove_state()
