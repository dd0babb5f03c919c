r"""Benchmark: examples/s the pretraining loader feeds (a script, not a test).

  python -m official_electra.benchmark.input_pipeline \
      --file_pattern=/tmp/electra_preprocess_benchmark/records_50mb \
      --batch_size=32 --max_seq_length=128 [--vocab_file=vocab.txt]

Times `pretraining_dataset` alone (no model) after a warm-up; ELECTRA-Small
training on 2 CPU cores consumes roughly 10-20 examples/s, so the loader must
feed well over 100/s to stay out of the way. Data that does not fit the flags
(length, vocabulary, truncated or unfinished shards) ends in one `error: ...`
line (the loader's checks), `--verbose` for the traceback.
"""

import time

from absl import app
from absl import flags

from official_electra import command_line
from official_electra import errors
from official_electra.data import pretraining_dataloader

FLAGS = flags.FLAGS
flags.DEFINE_string("file_pattern", None, "Dataset directory or glob.")
flags.DEFINE_integer("batch_size", 32, "Global batch size.")
flags.DEFINE_integer("max_seq_length", 128, "Record length.")
flags.DEFINE_integer("num_batches", 500, "Batches to time.")
flags.DEFINE_string("vocab_file", None, "Vocabulary the data must be built "
                    "with (optional).")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
flags.mark_flag_as_required("file_pattern")


def main(argv) -> None:
  del argv  # Unused.
  try:
    dataset = pretraining_dataloader.pretraining_dataset(
        FLAGS.file_pattern, FLAGS.batch_size, FLAGS.max_seq_length, seed=0,
        vocab_file=FLAGS.vocab_file)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  iterator = iter(dataset)
  for _ in range(20):
    next(iterator)
  start = time.monotonic()
  for _ in range(FLAGS.num_batches):
    next(iterator)
  seconds = time.monotonic() - start
  examples = FLAGS.num_batches * FLAGS.batch_size
  print(f"{examples / seconds:,.0f} examples/s "
        f"({FLAGS.num_batches / seconds:,.1f} batches of {FLAGS.batch_size} x "
        f"{FLAGS.max_seq_length} per second)")


if __name__ == "__main__":
  app.run(main)
