"""`dataset_info.json`: how a pretraining dataset was built, checked at load.

`tfrecords_tools.build_pretraining_dataset` writes it beside the shards, last
(so a directory with it is complete); the pretraining loader reads it to catch
a vocabulary or sequence length that does not match the model, and a shard
that is missing, resized, corrupt (by checksum) or not part of the dataset.
"""

import dataclasses
import hashlib
import json
import os
from typing import Optional

import tensorflow as tf

from official_electra import errors
from official_electra import files

DATASET_INFO_FILENAME = "dataset_info.json"
FORMAT_VERSION = 1
# The shard files of a dataset directory (tfrecords_tools.shard_writer's
# names); `.tmp` files are unfinished ones.
SHARD_FILE_GLOB = "pretrain_data.tfrecord-*"
_TEMPORARY_SUFFIX = ".tmp"
# How often each vocabulary id occurs in the records (one count per line, in
# vocab.txt's order), written by the build beside the shards.
TOKEN_COUNTS_FILENAME = "token_counts.txt"
_HASH_CHUNK_BYTES = 4 << 20
REPAIR_FIX = ("rebuild the dataset: rerun the `python -m "
              "tfrecords_tools.build_pretraining_dataset` command that built "
              "it (same --input, --vocab_file, --output_dir and flags), which "
              "checks every shard and redoes only the damaged ones")


def file_sha256(path: str) -> str:
  """Hex sha256 of a file (any TensorFlow filesystem)."""
  digest = hashlib.sha256()
  with tf.io.gfile.GFile(path, "rb") as data:
    while chunk := data.read(_HASH_CHUNK_BYTES):
      digest.update(chunk)
  return digest.hexdigest()


class DatasetInfoError(errors.UserError):
  """A dataset that does not fit the model or is unreadable; says the fix."""


@dataclasses.dataclass(frozen=True)
class DatasetInfo:
  """What a dataset directory holds and how it was made.

  Attributes:
    vocab_sha256: hex sha256 of the vocabulary file.
    vocab_size: lines in the vocabulary (the model's vocab_size).
    lower_case: whether text was lower-cased and accents stripped.
    max_seq_length: the fixed length of every record.
    special_token_ids: ids of `[PAD] [UNK] [CLS] [SEP] [MASK]`.
    seed: the packing seed.
    shard_files: shard file names (relative to the directory), in order.
    shard_sizes: bytes of each shard, to catch a truncated file.
    shard_sha256: hex sha256 of each shard, to catch a corrupt one (empty in
      datasets built before checksums were recorded).
    token_counts_file: `TOKEN_COUNTS_FILENAME` where the build wrote one
      (empty in datasets built before).
    shard_examples: records in each shard, so that a resumed run finds its
      place in the data stream by arithmetic (empty in datasets built
      before: the loader then counts them).
    num_documents: documents read.
    num_tokens: WordPiece tokens of the corpus (without `[CLS]`/`[SEP]`).
    num_truncated_tokens: corpus tokens left out by the packing rules.
    num_examples: records written.
    num_replaced_bytes: non-UTF-8 input bytes replaced (and then dropped).
    num_malformed_json_lines: JSON Lines rows skipped (not JSON, no `text`).
    input_files: the corpus files read.
    skipped_files: `{path: reason}` for empty or binary inputs.
    build_fingerprint: hash of inputs and flags, to recognise a rerun.
    format_version: version of this file's layout.
  """
  vocab_sha256: str
  vocab_size: int
  lower_case: bool
  max_seq_length: int
  special_token_ids: dict
  seed: int
  shard_files: list
  shard_sizes: list
  num_documents: int
  num_tokens: int
  num_truncated_tokens: int
  num_examples: int
  num_replaced_bytes: int = 0
  num_malformed_json_lines: int = 0
  input_files: list = dataclasses.field(default_factory=list)
  skipped_files: dict = dataclasses.field(default_factory=dict)
  build_fingerprint: str = ""
  shard_sha256: list = dataclasses.field(default_factory=list)
  token_counts_file: str = ""
  shard_examples: list = dataclasses.field(default_factory=list)
  format_version: int = FORMAT_VERSION

  @property
  def num_shards(self) -> int:
    return len(self.shard_files)

  def write(self, directory: str) -> str:
    """Writes `directory/dataset_info.json` atomically; returns its path."""
    path = os.path.join(directory, DATASET_INFO_FILENAME)
    files.write_json(path, dataclasses.asdict(self))
    return path

  def shard_problems(self, directory: str,
                     verify_checksums: bool = False) -> list:
    """What is wrong with the shards in `directory`, against this record.

    Cheap by default (a listing and file sizes); `verify_checksums` also
    reads every shard in full and compares its sha256.

    Returns:
      `[(shard index or None, message)]`: each listed shard that is missing,
      resized or (verified) of another checksum, and (index None) each shard
      file in the directory that is not listed. Empty when all is well.
    """
    info_path = os.path.join(directory, DATASET_INFO_FILENAME)
    problems = []
    for index, (name, size) in enumerate(zip(self.shard_files,
                                             self.shard_sizes)):
      path = os.path.join(directory, name)
      if not tf.io.gfile.exists(path):
        problems.append((index, f"{path} is missing ({info_path} lists it)"))
        continue
      actual = tf.io.gfile.stat(path).length
      if actual != size:
        problems.append((index, f"{path} has {actual} bytes but {info_path} "
                                f"records {size}: the file is truncated or "
                                "changed"))
      elif verify_checksums and self.shard_sha256:
        checksum = file_sha256(path)
        if checksum != self.shard_sha256[index]:
          problems.append((index, f"{path} has sha256 {checksum[:12]}... but "
                                  f"{info_path} records "
                                  f"{self.shard_sha256[index][:12]}...: the "
                                  "file is corrupt"))
    listed = set(self.shard_files)
    for path in sorted(tf.io.gfile.glob(os.path.join(directory,
                                                     SHARD_FILE_GLOB))):
      name = os.path.basename(path)
      if name not in listed and not name.endswith(_TEMPORARY_SUFFIX):
        problems.append((None, f"{path} is not one of the "
                               f"{self.num_shards} shards {info_path} lists"))
    return problems

  def check_compatible(self, path: str, vocab_size: Optional[int],
                       max_seq_length: int, vocab_file: Optional[str] = None,
                       vocab_sha256: Optional[str] = None) -> None:
    """Raises DatasetInfoError if the model's inputs differ from the data's.

    Args:
      path: the json file, for the message.
      vocab_size: the model's vocabulary size; None skips that check.
      max_seq_length: the model's sequence length.
      vocab_file: the model's vocabulary file, for the message.
      vocab_sha256: hex sha256 of that file; None skips that check (a
        vocabulary of the same size but other tokens is caught only by it).
    """
    if vocab_sha256 is not None and vocab_sha256 != self.vocab_sha256:
      raise DatasetInfoError(
          f"{path}: the data was built with another vocabulary (sha256 "
          f"{self.vocab_sha256[:12]}...) than {vocab_file} (sha256 "
          f"{vocab_sha256[:12]}...): pass the vocabulary the data was built "
          f"with, or rebuild the data with --vocab_file={vocab_file}")
    if vocab_size is not None and vocab_size != self.vocab_size:
      raise DatasetInfoError(
          f"{path}: the data was tokenized with a vocabulary of "
          f"{self.vocab_size} tokens but the model has vocab_size="
          f"{vocab_size}: use the same vocabulary for both (sha256 "
          f"{self.vocab_sha256[:12]}...) or rebuild the data")
    if max_seq_length != self.max_seq_length:
      raise DatasetInfoError(
          f"{path}: the records have max_seq_length={self.max_seq_length} "
          f"but the model reads max_seq_length={max_seq_length}: set "
          f"max_seq_length={self.max_seq_length} or rebuild the data with "
          f"--max_seq_length={max_seq_length}")


def write_token_counts(directory: str, counts) -> str:
  """Writes `directory/token_counts.txt` atomically; returns its path."""
  path = os.path.join(directory, TOKEN_COUNTS_FILENAME)
  files.write_text(path, "".join(f"{int(count)}\n" for count in counts))
  return path


def read_token_counts(directory: str, vocab_size: int) -> list:
  """The counts `write_token_counts` wrote, checked against `vocab_size`.

  Raises:
    DatasetInfoError: no counts (a dataset built before they were
      recorded), or counts of another vocabulary size.
  """
  info = read_dataset_info(directory)
  path = os.path.join(directory, TOKEN_COUNTS_FILENAME)
  if info is None or not info.token_counts_file or not tf.io.gfile.exists(
      path):
    raise DatasetInfoError(
        f"{directory} has no {TOKEN_COUNTS_FILENAME} (the token frequencies "
        "the unigram generator samples from): rebuild the data into an empty "
        "--output_dir with this version of tfrecords_tools")
  with tf.io.gfile.GFile(path) as counts_file:
    try:
      counts = [int(line) for line in counts_file.read().split()]
    except ValueError:
      counts = []
  if len(counts) != vocab_size or min(counts, default=-1) < 0:
    raise DatasetInfoError(
        f"{path} holds {len(counts)} counts, the vocabulary has {vocab_size} "
        "tokens (or a count is not a non-negative integer): rebuild the data")
  return counts


def read_dataset_info(directory: str) -> Optional[DatasetInfo]:
  """Reads `directory/dataset_info.json`; None if there is none.

  Raises:
    DatasetInfoError: the file exists but is not a valid dataset_info.json.
  """
  path = os.path.join(directory, DATASET_INFO_FILENAME)
  if not tf.io.gfile.exists(path):
    return None
  try:
    with tf.io.gfile.GFile(path) as info_file:
      fields = json.load(info_file)
    if fields.get("format_version") != FORMAT_VERSION:
      raise DatasetInfoError(
          f"{path} has format_version {fields.get('format_version')!r}, this "
          f"code reads {FORMAT_VERSION}: rebuild the data with this version "
          "of tfrecords_tools")
    return DatasetInfo(**fields)
  except (OSError, ValueError, TypeError, tf.errors.OpError) as error:
    if isinstance(error, DatasetInfoError):
      raise
    raise DatasetInfoError(
        f"{path} is not a valid dataset_info.json ({error}): rebuild the data "
        "or delete the file to load the records unchecked") from None
