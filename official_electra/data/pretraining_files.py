"""The record files of pretraining: which files a pattern names, and the
checks that they can train the model (finished, readable, the vocabulary
and sequence length they were built with), each failure one
`PretrainingDataError` line naming the file and the fix.
"""

import fnmatch
import os
from typing import Optional, Sequence, Union

from absl import logging
import tensorflow as tf

from official_electra import errors
from official_electra import files
from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_features
from official_electra.tokenization import vocabulary as vocabulary_lib

DEFAULT_SHARD_GLOB = dataset_info_lib.SHARD_FILE_GLOB
# A shard of an unfinished build.
_TEMPORARY_SUFFIX = ".tmp"
# tfrecords_tools' resume state: present only while a build is unfinished.
_UNFINISHED_BUILD_MARKER = ".build_state"
# What tfrecords_tools writes beside its shards: a pattern such as `data/*`
# matches them too; they are skipped, with one logged line.
_BUILD_SIDE_FILES = (dataset_info_lib.DATASET_INFO_FILENAME,
                     dataset_info_lib.TOKEN_COUNTS_FILENAME,
                     _UNFINISHED_BUILD_MARKER)
# Side files already logged: a training run resolves its pattern once per
# input pipeline, and says so once.
_reported_side_files = set()


class PretrainingDataError(errors.UserError):
  """Pretraining files that are missing, corrupt or do not fit the model."""


def resolve_files(file_pattern: Union[str, Sequence[str]]) -> list[str]:
  """The record files a pattern names, sorted.

  Args:
    file_pattern: a glob, a comma-separated list of globs, a list of them, or
      a dataset directory (its `pretrain_data.tfrecord-*` files). Temporary
      (`.tmp`) shards never match; the build's `dataset_info.json`,
      `token_counts.txt` and `.build_state/` are skipped (logged once).

  Returns:
    The files.

  Raises:
    PretrainingDataError: nothing matches, a directory is an unfinished
      build (whose shards have no final names before its end), or a matched
      file is not a TFRecord file (not named as a shard and without a record
      header: notes, a vocabulary, a folder).
  """
  patterns = ([file_pattern] if isinstance(file_pattern, str)
              else list(file_pattern))
  patterns = [p.strip() for text in patterns for p in text.split(",")
              if p.strip()]
  matches, side_files = set(), set()
  for pattern in patterns:
    if files.isdir(pattern):
      _check_not_unfinished(pattern)
      pattern = os.path.join(pattern, DEFAULT_SHARD_GLOB)
    for path in tf.io.gfile.glob(pattern):
      if os.path.basename(path) in _BUILD_SIDE_FILES:
        side_files.add(path)
      elif not path.endswith(_TEMPORARY_SUFFIX):
        matches.add(path)
  if side_files - _reported_side_files:
    _reported_side_files.update(side_files)
    logging.info("skipping %s: files of the dataset build, not records",
                 ", ".join(sorted(side_files)))
  if not matches:
    raise PretrainingDataError(
        f"no pretraining files match {file_pattern!r}: build them with "
        "`python -m tfrecords_tools.build_pretraining_dataset` or fix the "
        "pattern")
  matches = sorted(matches)
  for path in matches:
    _check_record_file(path)
  return matches


def _check_record_file(path):
  """Refuses a matched file that is not a TFRecord file, by its first
  record's header. Files named as shards are left to `check_files`."""
  if fnmatch.fnmatch(os.path.basename(path), DEFAULT_SHARD_GLOB):
    return
  if files.isdir(path):
    problem = "a folder"
  else:
    with tf.io.gfile.GFile(path, "rb") as record_file:
      header = record_file.read(pretraining_features.RECORD_HEADER_BYTES)
    if not header or pretraining_features.is_record_header(header):
      return  # Records, or none (an empty TFRecord file).
    problem = "no record header"
  raise PretrainingDataError(
      f"{path} is not a TFRecord file ({problem}) but the data pattern "
      "matches it: narrow the pattern to the records, e.g. "
      f"{os.path.join(os.path.dirname(path), DEFAULT_SHARD_GLOB)}, or pass "
      "the dataset folder")


def _check_against_info(info, directory, vocab_size, max_seq_length,
                        vocabulary, verify_checksums):
  path = os.path.join(directory, dataset_info_lib.DATASET_INFO_FILENAME)
  info.check_compatible(
      path, vocab_size, max_seq_length,
      vocab_file=vocabulary and vocabulary.path,
      vocab_sha256=vocabulary and vocabulary.sha256)
  problems = info.shard_problems(directory, verify_checksums)
  if problems:
    index, message = problems[0]
    others = (f" ({len(problems) - 1} more shard problems)"
              if len(problems) > 1 else "")
    fix = (dataset_info_lib.REPAIR_FIX if index is not None else
           f"move it out of {directory}, or rebuild the dataset in an empty "
           "--output_dir")
    raise PretrainingDataError(f"{message}{others}: {fix}")


def _check_first_record(file, vocab_size, max_seq_length):
  """Checks an unlabelled file (no dataset_info.json) by its first record."""
  spec = {name: tf.io.VarLenFeature(tf.int64)
          for name in pretraining_features.FEATURE_NAMES}
  try:
    record = next(iter(tf.data.TFRecordDataset(file).take(1)), None)
    if record is None:
      return
    features = tf.io.parse_single_example(record, spec)
  except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
    raise PretrainingDataError(
        f"{file} is not a TFRecord file of pretraining tf.train.Examples "
        f"({errors.first_line(error)}): rebuild it") from None
  lengths = {name: int(tf.size(values.values))
             for name, values in features.items()}
  if set(lengths.values()) != {max_seq_length}:
    raise PretrainingDataError(
        f"{file}: the first record has feature lengths {lengths}, the model "
        f"reads max_seq_length={max_seq_length}: set max_seq_length to the "
        "records' length or rebuild the data")
  input_ids = features["input_ids"].values
  if vocab_size is not None and int(tf.reduce_max(input_ids)) >= vocab_size:
    raise PretrainingDataError(
        f"{file}: the first record has token id "
        f"{int(tf.reduce_max(input_ids))}, outside the model's vocab_size="
        f"{vocab_size}: use the vocabulary the data was built with")


def _check_not_unfinished(directory):
  """Refuses the shards of a build that has not written dataset_info.json."""
  if tf.io.gfile.exists(os.path.join(directory, _UNFINISHED_BUILD_MARKER)):
    raise PretrainingDataError(
        f"{directory} is an unfinished build (it has "
        f"{_UNFINISHED_BUILD_MARKER}/ but no "
        f"{dataset_info_lib.DATASET_INFO_FILENAME}, or a repair of it was "
        "interrupted): rerun the same "
        "`python -m tfrecords_tools.build_pretraining_dataset` command to "
        "finish it")


def check_files(files: Sequence[str], max_seq_length: int,
                vocab_size: Optional[int] = None,
                vocab_file: Optional[str] = None,
                verify_checksums: bool = False) -> None:
  """Checks files against `dataset_info.json` beside them, or their first
  record where there is none (records of the original tool; warns once).

  With `dataset_info.json`, every shard it lists must be in the directory
  with its recorded size, and no other shard file may be there (cheap: a
  listing and sizes); `verify_checksums` also compares every shard's sha256
  (reads the data once).

  Args:
    files: the shard files.
    max_seq_length: the model's sequence length.
    vocab_size: the model's vocabulary size; None skips the check.
    vocab_file: the model's vocabulary; when given, it must be the file the
      data was built with (same sha256) or, without dataset_info.json, hold
      every id of the first record.
    verify_checksums: compare every shard's sha256 with the recorded one.

  Raises:
    PretrainingDataError, DatasetInfoError, VocabularyError: with the file and
      the fix; also for the shards of an unfinished build (or repair).
  """
  vocabulary = (vocabulary_lib.load_vocabulary(vocab_file)
                if vocab_file is not None else None)
  if vocab_size is None and vocabulary is not None:
    vocab_size = vocabulary.size
  by_directory = {}
  for file in files:
    by_directory.setdefault(os.path.dirname(file), []).append(file)
  for directory, directory_files in sorted(by_directory.items()):
    _check_not_unfinished(directory)
    info = dataset_info_lib.read_dataset_info(directory)
    if info is not None:
      _check_against_info(info, directory, vocab_size, max_seq_length,
                          vocabulary, verify_checksums)
    else:
      logging.log_first_n(
          logging.WARNING, "%s has no %s (records of the original tool?): "
          "checking the record length on the first record only", 1,
          directory, dataset_info_lib.DATASET_INFO_FILENAME)
      _check_first_record(directory_files[0], vocab_size, max_seq_length)


def find_unreadable_file(files: Sequence[str]) -> Optional[str]:
  """The first corrupt file, or None.

  A read error in training ("corrupted record at N") does not say which file;
  this does: by the checksums `dataset_info.json` records where there are
  some, else by reading every record (one full pass over the data).
  """
  unchecked = []
  by_directory = {}
  for file in files:
    by_directory.setdefault(os.path.dirname(file), []).append(file)
  for directory, directory_files in sorted(by_directory.items()):
    info = dataset_info_lib.read_dataset_info(directory)
    if info is None or not info.shard_sha256:
      unchecked += directory_files
      continue
    recorded = dict(zip(info.shard_files, info.shard_sha256))
    for file in directory_files:
      expected = recorded.get(os.path.basename(file))
      if expected is None:
        unchecked.append(file)
      elif dataset_info_lib.file_sha256(file) != expected:
        return file
  for file in unchecked:
    try:
      for _ in tf.data.TFRecordDataset(file):
        pass
    except tf.errors.DataLossError:
      return file
  return None
