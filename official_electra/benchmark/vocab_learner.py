r"""Benchmark: our WordPiece learner against tensorflow-text's (a script).

  python -m official_electra.benchmark.vocab_learner \
      --corpus='../shared/data/corpus/*.txt.gz' --vocab_size=30522

Counts the corpus's words as `tfrecords_tools.build_vocab` does (timed on
its own), then learns the vocabulary from the same counts with
`tfrecords_tools.wordpiece_learner.learn` and with tensorflow-text's
`wordpiece_tokenizer_learner_lib.learn`, one after the other in this process,
and prints each learner's wall time, their ratio, and whether the two token
lists are identical (they must be; a difference exits 1). `--max_words`
bounds the distinct words both learners read, as `build_vocab --max_words`
does; `--skip_reference` times ours alone (tensorflow-text's learner takes
minutes on a large corpus).
"""

import sys
import time

from absl import app
from absl import flags
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib

from official_electra import command_line
from official_electra import errors
from official_electra.tokenization import vocabulary as vocabulary_lib
from tfrecords_tools import build_vocab
from tfrecords_tools import wordpiece_learner

FLAGS = flags.FLAGS
flags.DEFINE_string("corpus", None, "Comma-separated globs of corpus files.")
flags.DEFINE_integer("vocab_size", 30522, "The largest vocabulary size.")
flags.DEFINE_integer("max_words", build_vocab.DEFAULT_MAX_WORDS,
                     "Distinct words the learners read (the most frequent).",
                     lower_bound=1)
flags.DEFINE_bool("lower_case", True, "Lower-case and strip accents.")
flags.DEFINE_bool("skip_reference", False,
                  "Time our learner only, not tensorflow-text's.")
flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
flags.mark_flag_as_required("corpus")


def _timed(function, *args, **kwargs):
  start = time.monotonic()
  result = function(*args, **kwargs)
  return result, time.monotonic() - start


class VocabulariesDifferError(errors.UserError):
  """The two learners learned different vocabularies from the same counts."""


def check_identical(ours, theirs):
  """Raises `VocabulariesDifferError` naming the first id where they differ."""
  if ours == theirs:
    return
  first = next((index for index, (a, b) in enumerate(zip(ours, theirs))
                if a != b), min(len(ours), len(theirs)))
  raise VocabulariesDifferError(
      f"the vocabularies differ, first at id {first}; ours must equal "
      "tensorflow-text's: report it with this corpus (--skip_reference "
      "times ours alone)")


def main(argv) -> None:
  del argv  # Unused.
  try:
    counts, count_seconds = _timed(build_vocab.count_words, FLAGS.corpus,
                                   FLAGS.lower_case)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  print(f"counted {len(counts):,} distinct words "
        f"({sum(counts.values()):,} in all) in {count_seconds:.1f} s",
        file=sys.stderr)
  word_counts = list(counts.items())
  reserved = list(vocabulary_lib.SPECIAL_TOKENS)
  ours, our_seconds = _timed(wordpiece_learner.learn, word_counts,
                             FLAGS.vocab_size, reserved,
                             max_input_tokens=FLAGS.max_words)
  print(f"ours: {len(ours):,} tokens in {our_seconds:.1f} s", file=sys.stderr)
  if FLAGS.skip_reference:
    return
  theirs, their_seconds = _timed(wordpiece_tokenizer_learner_lib.learn,
                                 word_counts, FLAGS.vocab_size, reserved,
                                 max_input_tokens=FLAGS.max_words)
  print(f"tensorflow-text: {len(theirs):,} tokens in {their_seconds:.1f} s",
        file=sys.stderr)
  print(f"speed-up: {their_seconds / our_seconds:.1f}x; identical: "
        f"{ours == theirs}", file=sys.stderr)
  try:
    check_identical(ours, theirs)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)


if __name__ == "__main__":
  app.run(main)
