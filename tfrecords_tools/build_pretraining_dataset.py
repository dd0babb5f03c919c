r"""Builds ELECTRA pretraining TFRecords from a text corpus.

  python -m tfrecords_tools.build_pretraining_dataset --input='corpus/*.txt' \
      --vocab_file=vocab.txt --output_dir=data --max_seq_length=128 \
      --lower_case --num_shards=16 --num_workers=2 --seed=0

Inputs: plain text (one sentence or paragraph per line, a blank line between
documents), JSON Lines with a `text` field (`*.jsonl`), either possibly
`.gz`/`.bz2`. Empty and binary files are skipped with a warning; invalid UTF-8
bytes are replaced and counted (see `corpus_reader`, `unit_processor`).

Tokenization is `official_electra.tokenization.WordpieceTokenizer` (BERT's
ids). Packing, segments and truncation follow the original tool exactly (the
rules are in `example_packer`'s docstring); tokens dropped by truncation are
counted in `num_truncated_tokens`.

Output: `pretrain_data.tfrecord-SSSSS-of-NNNNN` (features `input_ids`,
`input_mask`, `segment_ids`, int64 `[max_seq_length]`, interchangeable with
the original tool's records), `token_counts.txt` (how often each vocabulary id
occurs in the records, one count per line in vocab.txt's order: the unigram
generator's distribution) and, last, `dataset_info.json`.

Shards: example i (in corpus order) goes to shard `i % num_shards`, as in
the original tool with one job (`ExampleWriter.write_examples`), so every
shard is a uniform sample of the whole corpus; shard k starts at the k-th
`num_shards`-th of the corpus and wraps around, so the files a reader
interleaves are at different places of it (`shard_writer`). The examples
themselves do not depend on `--num_shards`, only where they go.

Guarantees:
- Streaming: the corpus is read once in units of about 1 MiB (a unit ends
  at a document's end, so a long document makes a longer one:
  `corpus_reader`), with a bounded number in flight and at most 64 MiB of records held between
  commits, so memory does not grow with the corpus.
- Deterministic: the bytes written depend only on the input files, the
  vocabulary, `--max_seq_length`, `--lower_case`, `--num_shards` and `--seed`,
  not on `--num_workers` (each unit has its own random source).
- Atomic and resumable: records are appended to `.tmp` files in commits
  (about one per 1/16 of the corpus, each recorded in `.build_state/`), and
  every shard is assembled and renamed to its final name once the corpus is
  done, so no final name is ever on a partial shard. After a kill, rerunning
  the same command goes on from the last commit and yields the same bytes as
  an uninterrupted run. A directory is complete when `dataset_info.json`
  exists; it records every shard's size, sha256 and records.
- Repairing: rerunning the command on a finished dataset checks every shard
  (present, its size, its sha256) and rebuilds only those that are missing or
  damaged, to the same bytes as before (this reads and tokenizes the whole
  corpus again: every shard holds part of all of it). Datasets of earlier
  versions, whose shard k was the k-th slice of the corpus, still load and
  are still checked, but are not repaired.
"""

import dataclasses
import hashlib
import os
import tempfile

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files as files_lib
from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_files
from tfrecords_tools import build_inputs
from tfrecords_tools import corpus_pass
from tfrecords_tools import shard_writer
from tfrecords_tools.errors import BuildError

_log = corpus_pass.log


def build_pretraining_dataset(
    input_patterns: str, vocab_file: str, output_dir: str,
    max_seq_length: int = 128, lower_case: bool = True, num_shards: int = 16,
    num_workers: int = 0, seed: int = 0
) -> dataset_info_lib.DatasetInfo:
  """Tokenizes, packs and writes a corpus; see the module docstring.

  Args:
    input_patterns: comma-separated globs of corpus files.
    vocab_file: BERT-format WordPiece vocabulary.
    output_dir: where shards and dataset_info.json go (created).
    max_seq_length: the record length.
    lower_case: BERT's `do_lower_case` (True for uncased vocabularies).
    num_shards: the number of output files.
    num_workers: worker processes; 0 works in this process.
    seed: seed of the packing's random choices.

  Returns:
    The written (or, for a finished build, existing) `DatasetInfo`.

  Raises:
    BuildError, VocabularyError, DatasetInfoError: a problem the user can fix.
  """
  if num_shards < 1 or max_seq_length < 5 or num_workers < 0:
    raise BuildError("need --num_shards >= 1, --max_seq_length >= 5 and "
                     "--num_workers >= 0")
  if not files_lib.is_local(output_dir):
    return _build_and_upload(
        input_patterns, vocab_file, output_dir, max_seq_length=max_seq_length,
        lower_case=lower_case, num_shards=num_shards, num_workers=num_workers,
        seed=seed)
  (vocabulary, files, skipped), fingerprints = (
      build_inputs.inputs_and_fingerprints(input_patterns, vocab_file,
                                           max_seq_length, lower_case,
                                           num_shards, seed))
  total_bytes = sum(f.num_bytes for f in files)
  try:
    os.makedirs(output_dir, exist_ok=True)
  except OSError as error:
    raise BuildError(f"cannot create --output_dir={output_dir} "
                     f"({error.strerror}): pass a writable folder") from None
  existing = dataset_info_lib.read_dataset_info(output_dir)
  damaged = None
  if existing is not None:
    contiguous = existing.build_fingerprint in fingerprints.contiguous
    if (existing.build_fingerprint not in fingerprints.same_layout and
        not contiguous):
      raise BuildError(
          f"{output_dir} holds a finished dataset built from other inputs or "
          "flags: use an empty --output_dir or delete it")
    damaged = _damaged_shards(existing, output_dir)
    if damaged and contiguous:
      raise BuildError(
          f"{next(iter(damaged.values()))}, and {output_dir} was built by an "
          "earlier version of this tool (shard k the k-th slice of the "
          "corpus), which this version cannot rebuild: rebuild the dataset "
          "in an empty --output_dir")
    if not damaged and existing.shard_sha256:
      _log(f"{output_dir} is already complete (every shard checked)")
      return existing
    for message in damaged.values():
      _log(f"warning: {message}: rebuilding this shard")

  if damaged == {}:  # A dataset from before checksums: record them.
    return _finish_repair(existing, None, damaged, output_dir)
  shards = shard_writer.ShardSet(
      output_dir, num_shards, fingerprints.current, total_bytes,
      targets=damaged, earlier_fingerprints=fingerprints.same_layout)
  totals, token_counts = corpus_pass.write_shards(
      files, total_bytes, shards, vocabulary.size, num_workers,
      worker_args=(vocabulary.path, bool(lower_case), max_seq_length, seed))
  if existing is not None:
    return _finish_repair(existing, shards, damaged, output_dir)

  if not totals["num_examples"]:
    shards.remove_all()
    raise BuildError(f"--input={input_patterns!r} holds no tokens: check that "
                     "it is text in the vocabulary's language")
  dataset_info_lib.write_token_counts(output_dir, token_counts)
  info = dataset_info_lib.DatasetInfo(
      vocab_sha256=vocabulary.sha256, vocab_size=vocabulary.size,
      lower_case=bool(lower_case), max_seq_length=max_seq_length,
      special_token_ids=vocabulary.special_token_ids(), seed=seed,
      shard_files=[shard_writer.shard_name(s, num_shards)
                   for s in range(num_shards)],
      shard_sizes=[os.path.getsize(shards.path(s)) for s in range(num_shards)],
      shard_sha256=[dataset_info_lib.file_sha256(shards.path(s))
                    for s in range(num_shards)],
      shard_examples=shards.shard_examples,
      token_counts_file=dataset_info_lib.TOKEN_COUNTS_FILENAME,
      input_files=[f.path for f in files], skipped_files=skipped,
      build_fingerprint=fingerprints.current,
      **{name: int(totals[name]) for name in corpus_pass.COUNT_NAMES})
  info.write(output_dir)
  shards.remove_state()
  _summarize(info)
  return info


def local_staging_dir(output_dir: str) -> str:
  """The local folder where the dataset for a remote `output_dir` is built:
  one per destination, so a killed build resumes there."""
  digest = hashlib.sha256(output_dir.encode()).hexdigest()[:16]
  return os.path.join(tempfile.gettempdir(), "official_electra_builds",
                      digest)


def _build_and_upload(input_patterns, vocab_file, output_dir, **options):
  """A dataset for a `gs://` (or other non-local) `output_dir`.

  Object stores cannot append to or truncate a file, which the resumable
  writer needs, so the dataset is built (and resumed) in a local staging
  folder, then uploaded: shards and token counts first, `dataset_info.json`
  last, so the destination is complete once it has that file. A destination
  that already holds this dataset, every shard's checksum matching, is
  reused; a damaged one is uploaded again.
  """
  existing = dataset_info_lib.read_dataset_info(output_dir)
  if existing is not None:
    _, fingerprints = build_inputs.inputs_and_fingerprints(
        input_patterns, vocab_file, options["max_seq_length"],
        options["lower_case"], options["num_shards"], options["seed"])
    if existing.build_fingerprint not in fingerprints.same_layout:
      raise BuildError(
          f"{output_dir} holds a finished dataset built from other inputs or "
          "flags: use an empty --output_dir or delete it")
    problems = existing.shard_problems(output_dir, verify_checksums=True)
    if not problems:
      _log(f"{output_dir} is already complete (every shard checked)")
      return existing
    for _, message in problems:
      _log(f"warning: {message}: uploading the dataset again")
  staging = local_staging_dir(output_dir)
  info = build_pretraining_dataset(input_patterns, vocab_file, staging,
                                   **options)
  names = [name for name in files_lib.listdir(staging)
           if name != dataset_info_lib.DATASET_INFO_FILENAME]
  for name in sorted(names) + [dataset_info_lib.DATASET_INFO_FILENAME]:
    _log(f"uploading {name} to {output_dir}")
    files_lib.copy(os.path.join(staging, name), os.path.join(output_dir, name))
  files_lib.remove_tree(staging)
  return info


def _damaged_shards(info, output_dir) -> dict:
  """`{shard index: what is wrong}` for a finished dataset's shards.

  Checks presence, sizes and checksums; a dataset from before checksums were
  recorded is checked by reading every record instead.

  Raises:
    BuildError: a shard file in `output_dir` that the dataset does not list.
  """
  damaged = {}
  for index, message in info.shard_problems(output_dir, verify_checksums=True):
    if index is None:
      raise BuildError(f"{message}: move it out of {output_dir} (it is not "
                       "part of this dataset)")
    damaged.setdefault(index, message)
  if not info.shard_sha256:
    for index, name in enumerate(info.shard_files):
      path = os.path.join(output_dir, name)
      if index not in damaged and (
          pretraining_files.find_unreadable_file([path]) is not None):
        damaged[index] = f"{path} holds a corrupt record"
  return damaged


def _finish_repair(info, shards, damaged, output_dir):
  """Checks the rebuilt shards against the record; adds missing checksums."""
  paths = [os.path.join(output_dir, name) for name in info.shard_files]
  for index in damaged:
    path = paths[index]
    if os.path.getsize(path) != info.shard_sizes[index] or (
        info.shard_sha256 and
        dataset_info_lib.file_sha256(path) != info.shard_sha256[index]):
      raise BuildError(
          f"{path} was rebuilt but differs from what {output_dir}/"
          f"{dataset_info_lib.DATASET_INFO_FILENAME} records: the corpus "
          "files changed since the build (same names and sizes, other bytes); "
          "rebuild the dataset in an empty --output_dir")
  if not info.shard_sha256:
    info = dataclasses.replace(info, shard_sha256=[
        dataset_info_lib.file_sha256(path) for path in paths])
  info.write(output_dir)
  if shards is not None:
    shards.remove_state()
  _log(f"repaired {len(damaged)} of {info.num_shards} shards in {output_dir}"
       if damaged else f"recorded the shards' checksums in {output_dir}")
  return info


def _summarize(info: dataset_info_lib.DatasetInfo) -> None:
  truncated = info.num_truncated_tokens / max(1, info.num_tokens)
  _log(f"done: {info.num_documents:,} documents, {info.num_tokens:,} tokens, "
       f"{info.num_examples:,} examples in {info.num_shards} shards; "
       f"{info.num_truncated_tokens:,} tokens ({100 * truncated:.1f}%) cut by "
       "truncation")
  if info.num_replaced_bytes:
    _log(f"warning: {info.num_replaced_bytes:,} bytes were not UTF-8; they "
         "were replaced by U+FFFD and dropped")
  if info.num_malformed_json_lines:
    _log(f"warning: skipped {info.num_malformed_json_lines:,} JSON Lines rows "
         "that are not objects with a string 'text' field")
  if truncated > 0.1:
    _log("warning: over 10% of the tokens were cut: lines longer than "
         "--max_seq_length lose their end; split long paragraphs into "
         "sentences, one per line")


FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_string("input", None, "Comma-separated globs of corpus files.")
  flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary (vocab.txt).")
  flags.DEFINE_string("output_dir", None, "Directory for the shards.")
  flags.DEFINE_integer("max_seq_length", 128, "Tokens per example.")
  flags.DEFINE_bool("lower_case", True, "Lower-case and strip accents "
                    "(uncased vocabularies); --nolower_case for cased ones.")
  flags.DEFINE_integer("num_shards", 16, "Number of output files.")
  flags.DEFINE_integer("num_workers", os.cpu_count() or 1,
                       "Worker processes; 0 works in the main process.")
  flags.DEFINE_integer("seed", 0, "Seed of the packing's random choices.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
  flags.mark_flags_as_required(["input", "vocab_file", "output_dir"])


def main(argv) -> None:
  del argv  # Unused.
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
  try:
    build_pretraining_dataset(
        FLAGS.input, FLAGS.vocab_file, FLAGS.output_dir,
        max_seq_length=FLAGS.max_seq_length, lower_case=FLAGS.lower_case,
        num_shards=FLAGS.num_shards, num_workers=FLAGS.num_workers,
        seed=FLAGS.seed)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)


if __name__ == "__main__":
  define_flags()
  app.run(main)
