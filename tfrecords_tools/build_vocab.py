r"""Learns a WordPiece vocabulary from a corpus.

  python -m tfrecords_tools.build_vocab --input='corpus/*.txt' \
      --output=vocab.txt --vocab_size=30522 --lower_case

Words are split exactly as `WordpieceTokenizer` splits them (BERT's
normalisation), counted over the whole corpus (streamed; memory grows with the
number of distinct words only), and given to
`tfrecords_tools.wordpiece_learner`: tensorflow-text's WordPiece learning
algorithm with the same result token for token (its tests compare the two),
many times faster (`python -m official_electra.benchmark.vocab_learner`).
The file starts with `[PAD] [UNK] [CLS] [SEP] [MASK]` (ids 0-4) and
is written atomically.
"""

import collections
import os
import sys

from absl import app
from absl import flags
import tensorflow as tf

from official_electra import command_line
from official_electra import errors
from official_electra import files
from official_electra.tokenization import bert_text_normalization
from official_electra.tokenization import vocabulary as vocabulary_lib
from tfrecords_tools import corpus_reader
from tfrecords_tools import unit_processor
from tfrecords_tools import wordpiece_learner
from tfrecords_tools.errors import BuildError

_UNIT_BYTES = 1 << 20


def count_words(input_patterns: str, lower_case: bool) -> collections.Counter:
  """Counts of BERT-normalised words over the corpus files.

  Invalid UTF-8 bytes are replaced and dropped, with a warning that counts them.

  Raises:
    BuildError: a pattern matches nothing, a file is unreadable, or every file
      is empty or binary.
  """
  files, skipped = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(input_patterns))
  for path, reason in skipped.items():
    print(f"warning: skipping {path}: {reason}", file=sys.stderr)
  if not files:
    raise BuildError(f"--input={input_patterns!r} holds no words: "
                     f"{corpus_reader.describe_skipped(skipped)}; point it at "
                     "UTF-8 text files")
  split_words = tf.function(
      lambda texts: bert_text_normalization.split_words(texts, lower_case),
      input_signature=[tf.TensorSpec([None], tf.string)])
  counts = collections.Counter()
  replaced_bytes = 0
  for unit in corpus_reader.iter_units(files, _UNIT_BYTES):
    sentences, _, unit_replaced_bytes, _ = unit_processor.read_sentences(unit)
    replaced_bytes += unit_replaced_bytes
    if sentences:
      counts.update(split_words(tf.constant(sentences)).flat_values.numpy())
  if replaced_bytes:
    print(f"warning: {replaced_bytes:,} bytes were not UTF-8; they were "
          "replaced by U+FFFD and dropped", file=sys.stderr)
  return collections.Counter(
      {word.decode("utf-8"): count for word, count in counts.items()})


# tensorflow-text's default: the learner reads at most this many distinct
# words, the most frequent ones.
DEFAULT_MAX_WORDS = 5_000_000


def build_vocab(input_patterns: str, output: str, vocab_size: int,
                lower_case: bool,
                max_words: int = DEFAULT_MAX_WORDS) -> list[str]:
  """Learns and writes a vocabulary; returns its tokens.

  `max_words` bounds the distinct words the learner reads (the most frequent
  ones): its time grows with them, and a large corpus's rarest words (hapaxes,
  markup) change the vocabulary little.

  Raises:
    BuildError: no words in the corpus, too small a vocab_size or an output
      folder that does not exist.
  """
  special_tokens = list(vocabulary_lib.SPECIAL_TOKENS)
  if vocab_size <= len(special_tokens):
    raise BuildError(f"--vocab_size={vocab_size} leaves no room besides "
                     f"{' '.join(special_tokens)}: use e.g. 30522")
  output_folder = os.path.dirname(files.absolute(output))
  if not files.isdir(output_folder):
    raise BuildError(f"cannot write --output={output}: the folder "
                     f"{output_folder} does not exist; create it first")
  word_counts = count_words(input_patterns, lower_case)
  if not word_counts:
    raise BuildError(f"--input={input_patterns!r} holds no words: point it at "
                     "UTF-8 text files")
  tokens = wordpiece_learner.learn(
      list(word_counts.items()), vocab_size, special_tokens,
      max_input_tokens=max_words)
  files.write_text(output, "".join(token + "\n" for token in tokens))
  vocabulary_lib.load_vocabulary(output)
  return tokens


FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_string("input", None, "Comma-separated globs of corpus files.")
  flags.DEFINE_string("output", None, "The vocabulary file to write.")
  flags.DEFINE_integer("vocab_size", 30522, "The largest vocabulary size.")
  flags.DEFINE_bool("lower_case", True, "Lower-case and strip accents "
                    "(an uncased vocabulary).")
  flags.DEFINE_integer("max_words", DEFAULT_MAX_WORDS, "Distinct words the "
                       "learner reads (the most frequent); lower it to learn "
                       "faster from a large corpus.", lower_bound=1)
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")
  flags.mark_flags_as_required(["input", "output"])


def main(argv) -> None:
  del argv  # Unused.
  try:
    tokens = build_vocab(FLAGS.input, FLAGS.output, FLAGS.vocab_size,
                         FLAGS.lower_case, FLAGS.max_words)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  print(f"wrote {len(tokens)} tokens to {FLAGS.output}", file=sys.stderr)


if __name__ == "__main__":
  define_flags()
  app.run(main)
