"""What a build of the data tool reads, and the fingerprints that name it:
a rerun with the same inputs and flags goes on from (or reuses) the build in
its --output_dir; any other refuses it.
"""

import hashlib
import json
import os
from typing import NamedTuple

from official_electra import files as files_lib
from official_electra.data import dataset_info as dataset_info_lib
from official_electra.tokenization import vocabulary as vocabulary_lib
from tfrecords_tools import corpus_pass
from tfrecords_tools import corpus_reader
from tfrecords_tools.errors import BuildError

# In the fingerprint: how examples are dealt to shards (builds of earlier
# versions, without it, wrote shard k from the k-th slice of the corpus).
SHARD_LAYOUT = "rotated_round_robin"


def _fingerprint(settings: dict) -> str:
  return hashlib.sha256(
      json.dumps(settings, sort_keys=True).encode()).hexdigest()


class Fingerprints(NamedTuple):
  """The fingerprints that name one build's inputs and flags.

  Attributes:
    current: this version's, of the inputs' paths with their symbolic links
      resolved, so every spelling of a file (relative, absolute, through a
      linked folder) names one build.
    same_layout: every fingerprint of this build with today's shard layout:
      `current` and that of earlier versions, which fingerprinted the paths
      as the --input pattern spelled them.
    contiguous: the fingerprints of the build laid out by versions before
      `SHARD_LAYOUT` (shard k the k-th slice of the corpus), either spelling.
  """
  current: str
  same_layout: frozenset
  contiguous: frozenset


def _canonical(path: str) -> str:
  """A local path with its symbolic links resolved; a URL as it is."""
  return os.path.realpath(path) if files_lib.is_local(path) else path


def inputs_and_fingerprints(input_patterns, vocab_file, max_seq_length,
                            lower_case, num_shards, seed):
  """`((vocabulary, corpus files, skipped files), Fingerprints)`: the
  fingerprints name the dataset these inputs and flags give.

  Raises:
    BuildError, VocabularyError: no usable corpus or vocabulary.
  """
  vocabulary = vocabulary_lib.load_vocabulary(vocab_file)
  files, skipped = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(input_patterns))
  for path, reason in skipped.items():
    corpus_pass.log(f"warning: skipping {path}: {reason}")
  if not sum(f.num_bytes for f in files):
    raise BuildError(f"no text in --input={input_patterns!r}: "
                     f"{corpus_reader.describe_skipped(skipped)}; point it at "
                     "UTF-8 text files")
  flags_used = {
      "format": dataset_info_lib.FORMAT_VERSION,
      "vocab_sha256": vocabulary.sha256, "lower_case": bool(lower_case),
      "max_seq_length": max_seq_length, "num_shards": num_shards,
      "seed": seed}
  resolved, spelled = (
      {**flags_used, "inputs": [[name(f.path), f.num_bytes] for f in files]}
      for name in (_canonical, str))
  layout = {"shard_layout": SHARD_LAYOUT}
  fingerprints = Fingerprints(
      current=_fingerprint({**resolved, **layout}),
      same_layout=frozenset(_fingerprint({**settings, **layout})
                            for settings in (resolved, spelled)),
      contiguous=frozenset(map(_fingerprint, (resolved, spelled))))
  return (vocabulary, files, skipped), fingerprints
