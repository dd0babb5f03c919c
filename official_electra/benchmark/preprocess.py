r"""Benchmark: text to finished TFRecords, end to end (a script, not a test).

  python -m official_electra.benchmark.preprocess --corpus_mb=50 \
      --vocab_file=../shared/data/vocab/bert_base_uncased_vocab.txt

Assembles a corpus of `--corpus_mb` MB from docstrings of the Python on this
machine (`tfrecords_tools.sample_corpus`; nothing is downloaded; cached in
`--work_dir`), runs `build_pretraining_dataset` on it with `--num_workers`
processes, and prints tokens/s (corpus tokens over wall time, including
process start-up) and the peak RSS of the main process and of the largest
worker. This Python holds about 59 MB of distinct docstrings; to double the
corpus, `--copies=2` writes the 50 MB corpus twice (100 MB). Run it with
`--copies=1` and `--copies=2`: peak memory should stay flat.
"""

import os
import resource
import shutil
import sys
import time

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra import files
from tfrecords_tools import build_pretraining_dataset as build_lib
from tfrecords_tools import sample_corpus

FLAGS = flags.FLAGS
flags.DEFINE_integer("corpus_mb", 50, "Corpus size in MB (10**6 bytes).")
flags.DEFINE_integer("copies", 1, "Times the corpus is repeated in the file.")
flags.DEFINE_string("vocab_file", None, "WordPiece vocabulary.")
flags.DEFINE_string("work_dir", "/tmp/electra_preprocess_benchmark",
                    "Where the corpus is cached and the shards are written.")
flags.DEFINE_integer("num_workers", os.cpu_count() or 1, "Worker processes.")
flags.DEFINE_integer("num_shards", 16, "Output files.")
flags.DEFINE_integer("max_seq_length", 128, "Record length.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
flags.mark_flag_as_required("vocab_file")


def _make_work_dir(work_dir: str) -> None:
  try:
    os.makedirs(work_dir, exist_ok=True)
  except OSError as error:
    raise errors.UserError(
        f"cannot create --work_dir={work_dir} ({error.strerror}); pass a "
        "writable folder") from None


def _corpus(work_dir: str, corpus_mb: int) -> str:
  path = os.path.join(work_dir, f"corpus_{corpus_mb}mb.txt")
  if not os.path.exists(path):
    start = time.monotonic()
    unfinished = path + files.TEMPORARY_SUFFIX
    written = sample_corpus.write_stdlib_corpus(unfinished, corpus_mb * 10**6)
    if written < 0.95 * corpus_mb * 10**6:
      files.remove(unfinished)
      raise errors.UserError(f"only {written / 1e6:.1f} MB of docstrings on "
                             "this machine; ask for a smaller --corpus_mb")
    files.move(unfinished, path)
    print(f"assembled {written / 1e6:.1f} MB in "
          f"{time.monotonic() - start:.0f} s", file=sys.stderr)
  return path


def _repeated(path: str, copies: int) -> str:
  if copies == 1:
    return path
  repeated = path.replace(".txt", f"_x{copies}.txt")
  if not os.path.exists(repeated):
    unfinished = repeated + files.TEMPORARY_SUFFIX
    with open(unfinished, "wb") as output:
      for _ in range(copies):
        with open(path, "rb") as source:
          shutil.copyfileobj(source, output)
    files.move(unfinished, repeated)
  return repeated


def main(argv) -> None:
  del argv  # Unused.
  try:
    _make_work_dir(FLAGS.work_dir)
    corpus = _repeated(_corpus(FLAGS.work_dir, FLAGS.corpus_mb), FLAGS.copies)
    output_dir = os.path.join(FLAGS.work_dir, "records")
    shutil.rmtree(output_dir, ignore_errors=True)
    start = time.monotonic()
    info = build_lib.build_pretraining_dataset(
        corpus, FLAGS.vocab_file, output_dir,
        max_seq_length=FLAGS.max_seq_length, num_shards=FLAGS.num_shards,
        num_workers=FLAGS.num_workers)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  seconds = time.monotonic() - start
  main_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
  print(f"corpus {os.path.getsize(corpus) / 1e6:.1f} MB, "
        f"{info.num_tokens:,} tokens, {info.num_examples:,} examples, "
        f"{FLAGS.num_workers} workers, {os.cpu_count()} cores: "
        f"{seconds:.1f} s, {info.num_tokens / seconds:,.0f} tokens/s, "
        f"peak RSS main {main_rss:.0f} MiB, largest worker {worker_rss:.0f} "
        "MiB")


if __name__ == "__main__":
  app.run(main)
