"""The SQuAD windows of one file and one setting, cached between runs.

`load_or_build_features` caches the windows `squad_windows.featurize`
builds in `cache_dir`: model inputs and labels in a TFRecord file
(`window_feature_spec`, read back by `window_records_dataset`) and, in a
JSON file beside it, what post-processing needs besides (each context's
token -> word map; the windows' tokens, spans and max-context flags are
recomputed from it by the code that built them,
`squad_windows.windows_from_arrays`). Both names carry a fingerprint of the
data file, the vocabulary, the casing and every length, and are written
atomically.
"""

import hashlib
import json
import os
from typing import Iterable, Optional

from absl import logging
import numpy as np
import tensorflow as tf

from official_electra import errors
from official_electra import files
from official_electra.data import squad
from official_electra.data import squad_windows

# Bumped whenever the cached windows would come out differently.
CACHE_FORMAT_VERSION = 1
_SEQUENCE_FEATURES = ("input_word_ids", "input_mask", "input_type_ids")
_SCALAR_FEATURES = ("start_positions", "end_positions", "is_impossible",
                    "unique_ids")


def window_feature_spec(max_seq_length: int) -> dict:
  """The one feature spec of the cached window records (all int64)."""
  spec = {name: tf.io.FixedLenFeature([max_seq_length], tf.int64)
          for name in _SEQUENCE_FEATURES}
  spec.update({name: tf.io.FixedLenFeature([], tf.int64)
               for name in _SCALAR_FEATURES})
  return spec


def window_records_dataset(record_file: str, max_seq_length: int,
                           batch_size: Optional[int] = None) -> tf.data.Dataset:
  """The cached windows of `record_file`, in file order.

  Returns:
    A dataset of dicts with `squad_windows.stack_windows`' keys and dtypes:
    one window each, or batches of `batch_size` (the last one smaller) when
    given.
  """
  spec = window_feature_spec(max_seq_length)

  def parse(serialized):
    parsed = tf.io.parse_example(serialized, spec)
    return {name: tf.cast(value, tf.float32 if name == "is_impossible" else
                          tf.int64 if name == "unique_ids" else tf.int32)
            for name, value in parsed.items()}

  dataset = tf.data.TFRecordDataset(record_file).batch(batch_size or 1024)
  dataset = dataset.map(parse)
  return dataset if batch_size else dataset.unbatch()


def load_or_build_features(squad_file: squad.SquadFile, tokenizer, *,
                           max_seq_length: int, doc_stride: int,
                           max_query_length: int, is_training: bool,
                           cache_dir: str, version: Optional[str] = None,
                           articles: Optional[Iterable[int]] = None,
                           max_examples: Optional[int] = None
                           ) -> tuple[list, list, str]:
  """The examples and windows of a SQuAD file, featurized once per setting.

  The windows are cached in `cache_dir` as `squad_<train|eval>_<key>.tfrecord`
  (model inputs and labels) and `.json` beside it (the fingerprint and each
  context's token -> word map), `key` hashing the data file's sha256, the
  vocabulary's sha256, the casing, every length, `is_training`, `version`,
  `articles`, `max_examples` and the cache format. A later call with the same
  key reads them instead of tokenizing; an unreadable cache is rebuilt.

  Args:
    squad_file: the SQuAD JSON file, as `squad.load_squad_file` read it.
    tokenizer: a `WordpieceTokenizer`.
    max_seq_length, doc_stride, max_query_length, is_training: as
      `squad_windows.featurize`.
    cache_dir: the folder of the cache files (created when first written).
    version, articles: as `squad.read_squad_file`.
    max_examples: keep only the first questions (after `articles`).

  Returns:
    `(examples, windows, version)` as `squad.read_squad_file` and
    `squad_windows.featurize`.

  Raises:
    squad.SquadDataError: as `squad.read_squad_file` and
      `squad_windows.featurize`; nothing is written.
  """
  data_file = squad_file.path
  articles = None if articles is None else tuple(articles)
  examples, version = squad_file.questions(is_training, version, articles)
  if max_examples is not None:
    examples = examples[:max_examples]
  if not examples:
    raise squad.SquadDataError(
        f"no questions selected from SQuAD file {data_file}: check articles "
        "and max_examples")
  fingerprint = {
      "cache_format": CACHE_FORMAT_VERSION,
      "data_sha256": squad_file.sha256,
      "vocab_sha256": tokenizer.vocab_sha256,
      "lower_case": tokenizer.lower_case,
      "max_seq_length": max_seq_length, "doc_stride": doc_stride,
      "max_query_length": max_query_length, "is_training": bool(is_training),
      "version": version,
      "articles": None if articles is None else sorted(set(articles)),
      "max_examples": max_examples,
  }
  key = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()
                       ).hexdigest()[:16]
  stem = os.path.join(cache_dir,
                      f"squad_{'train' if is_training else 'eval'}_{key}")
  windows = _read_cache(stem, fingerprint, examples, tokenizer, max_seq_length,
                        doc_stride)
  if windows is None:
    windows, word_maps = squad_windows.featurize_with_word_maps(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length,
        is_training)
    _write_cache(stem, fingerprint, examples, windows, word_maps)
    logging.info("%s: %d questions -> %d windows, cached in %s.tfrecord",
                 data_file, len(examples), len(windows), stem)
  return examples, windows, version


def _write_cache(stem, fingerprint, examples, windows, word_maps):
  """The records, then the JSON that marks them complete; both atomic."""
  files.makedirs(os.path.dirname(stem) or ".")
  arrays = squad_windows.stack_windows(windows)
  temporary_path = stem + ".tfrecord" + files.TEMPORARY_SUFFIX
  with tf.io.TFRecordWriter(temporary_path) as writer:
    for row in range(len(windows)):
      feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(
          value=np.reshape(arrays[name][row], [-1]).astype(np.int64)))
                 for name in _SEQUENCE_FEATURES + _SCALAR_FEATURES}
      writer.write(tf.train.Example(features=tf.train.Features(
          feature=feature)).SerializeToString())
  files.move(temporary_path, stem + ".tfrecord")
  context_index = {text: index for index, text in enumerate(word_maps)}
  files.write_text(stem + ".json", json.dumps({
      "fingerprint": fingerprint,
      "num_examples": len(examples),
      "num_windows": len(windows),
      "example_contexts": [context_index[example.context_text]
                           for example in examples],
      "context_token_to_word": list(word_maps.values()),
  }, separators=(",", ":")))


def _read_cache(stem, fingerprint, examples, tokenizer, max_seq_length,
                doc_stride):
  """The cached windows, or None when absent, stale or unreadable."""
  if not (files.exists(stem + ".json") and files.exists(stem + ".tfrecord")):
    return None
  try:
    info = files.read_json(stem + ".json")
    if (info["fingerprint"] != fingerprint or
        info["num_examples"] != len(examples)):
      raise ValueError("its fingerprint differs")
    batches = list(window_records_dataset(stem + ".tfrecord", max_seq_length,
                                          batch_size=4096).as_numpy_iterator())
    arrays = {name: np.concatenate([batch[name] for batch in batches])
              for name in window_feature_spec(max_seq_length)}
    if len(arrays["unique_ids"]) != info["num_windows"]:
      raise ValueError("its window count differs")
    word_maps = info["context_token_to_word"]
    windows = squad_windows.windows_from_arrays(
        arrays, [word_maps[index] for index in info["example_contexts"]],
        tokenizer, max_seq_length, doc_stride)
  except (OSError, ValueError, KeyError, IndexError, TypeError,
          tf.errors.OpError) as error:
    logging.warning("rebuilding the SQuAD feature cache %s.tfrecord: %s", stem,
                    errors.first_line(error))
    return None
  logging.info("read %d SQuAD windows from the cache %s.tfrecord", len(windows),
               stem)
  return windows
