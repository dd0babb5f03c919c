"""What each masking scheme masks on a dataset: shares, spans, budget.

  python -m official_electra.experiments.masking_stats --train_data=DIR \
      --vocab_file=vocab.txt --max_seq_length=128 [--batches=20]

For `tokens`, `spans` and `whole_words` (`span_masking.SCHEMES`), over the
same batches of the dataset: the share of real tokens masked and of the
budget met, for the span schemes the mean span in words and in tokens
and the longest span, and the milliseconds a batch of 64 takes to mask in a
`tf.function` (no XLA).
"""

import time

from absl import app
from absl import flags
import numpy as np
import tensorflow as tf

from official_electra import command_line
from official_electra import errors
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.modeling.layers import dynamic_masking
from official_electra.modeling.layers import span_masking
from official_electra.tokenization import vocabulary as vocabulary_lib
from official_electra.training import architecture

FLAGS = flags.FLAGS


def _define_flags():
  """The command's flags (defined only when it runs, so tests can import
  the module beside other programs)."""
  flags.DEFINE_string("train_data", None, "TFRecord dataset directory or glob.")
  flags.DEFINE_string("vocab_file", None, "The dataset's vocabulary.")
  flags.DEFINE_integer("max_seq_length", 128, "The records' length.")
  flags.DEFINE_float("mask_prob", 0.15, "Fraction of the tokens masked.")
  flags.DEFINE_integer("batches", 20, "Batches of 64 sequences measured.")
  flags.DEFINE_bool("verbose", False, "Show tracebacks of errors.")


def masking_layers(vocabulary, max_seq_length, mask_prob):
  """`{scheme: layer}` as the pretrainer builds them."""
  special = vocabulary.special_token_ids()
  common = dict(
      mask_token_id=special["[MASK]"],
      excluded_token_ids=architecture.never_masked_token_ids(special),
      max_predictions_per_seq=dynamic_masking.max_predictions_per_seq(
          max_seq_length, mask_prob),
      mask_prob=mask_prob)
  continuation = span_masking.continuation_token_ids(vocabulary.tokens)
  return {
      "tokens": dynamic_masking.DynamicMasking(**common),
      "spans": span_masking.SpanMasking(
          continuation_token_ids=continuation, vocab_size=vocabulary.size,
          **common),
      "whole_words": span_masking.SpanMasking(
          continuation_token_ids=continuation, vocab_size=vocabulary.size,
          max_span_words=1, **common),
  }


def span_statistics(ids, token_span, continuation):
  """Mean words and tokens per span and the longest span (in words), from
  `SpanMasking.draw_spans`' span ids (`[batch, len]`, -1 where unmasked)."""
  words, tokens = [], []
  for row in range(ids.shape[0]):
    for span in np.unique(token_span[row][token_span[row] >= 0]):
      positions = np.flatnonzero(token_span[row] == span)
      tokens.append(len(positions))
      words.append(1 + sum(int(ids[row, position] not in continuation)
                           for position in positions[1:]))
  return np.mean(words), np.mean(tokens), max(words)


def measure(dataset, layers, continuation):
  """`{scheme: statistics}` over the batches of `dataset`; the budget is
  that of `layers["tokens"]` (every scheme's)."""
  totals = {scheme: {"masked": 0, "mask_token": 0, "met": 0, "words": [],
                     "tokens": [], "longest": 0} for scheme in layers}
  real = rows = 0
  for step, batch in enumerate(dataset):
    ids, input_mask = batch["input_word_ids"], batch["input_mask"]
    ids_np = ids.numpy()
    budget = dynamic_masking.tokens_to_mask(
        input_mask, layers["tokens"].mask_prob,
        layers["tokens"].max_predictions_per_seq).numpy()
    real += int(input_mask.numpy().sum())
    rows += ids_np.shape[0]
    for scheme, layer in layers.items():
      seed = tf.constant([step, 17], tf.int64)
      outputs = layer(ids, input_mask, seed=seed)
      weights = outputs["masked_weights"].numpy()
      positions = outputs["masked_positions"].numpy()
      masked = np.zeros(ids_np.shape, bool)
      for row in range(ids_np.shape[0]):
        masked[row, positions[row][weights[row] > 0]] = True
      total = totals[scheme]
      total["masked"] += int(masked.sum())
      total["mask_token"] += int(
          (outputs["masked_input_ids"].numpy() != ids_np).sum())
      total["met"] += int((masked.sum(axis=1) == budget).sum())
      if scheme == "tokens":
        continue  # single tokens
      # The spans `call` drew: it splits its seed, spans from the first half.
      token_span = layer.draw_spans(
          ids, input_mask,
          tf.random.experimental.stateless_split(seed, 2)[0]).numpy()
      words, tokens, longest = span_statistics(ids_np, token_span,
                                               continuation)
      total["words"].append(words)
      total["tokens"].append(tokens)
      total["longest"] = max(total["longest"], longest)
  return {scheme: {
      "masked_share": total["masked"] / real,
      "mask_token_share": total["mask_token"] / real,
      "budget_met_share": total["met"] / rows,
      "mean_span_words": (float(np.mean(total["words"])) if total["words"]
                          else 1.0),
      "mean_span_tokens": (float(np.mean(total["tokens"])) if total["tokens"]
                           else 1.0),
      "longest_span_words": total["longest"] or 1,
  } for scheme, total in totals.items()}


def milliseconds_per_batch(layers, batch, repeats=10):
  """`{scheme: ms}` of one `tf.function` call of each layer on `batch`
  (after a first, traced call), without XLA."""
  timings = {}
  for scheme, layer in layers.items():
    masked = tf.function(lambda ids, mask, seed, layer=layer: layer(
        ids, mask, seed=seed)["masked_input_ids"])
    inputs = (batch["input_word_ids"], batch["input_mask"])
    masked(*inputs, tf.constant([0, 1], tf.int64)).numpy()
    started = time.perf_counter()
    for repeat in range(repeats):
      masked(*inputs, tf.constant([repeat, 1], tf.int64)).numpy()
    timings[scheme] = 1000 * (time.perf_counter() - started) / repeats
  return timings


def main(argv):
  del argv
  try:
    vocabulary = vocabulary_lib.load_vocabulary(FLAGS.vocab_file)
    files = pretraining_files.resolve_files(FLAGS.train_data)
    pretraining_files.check_files(files, FLAGS.max_seq_length,
                                       vocabulary.size, FLAGS.vocab_file)
    dataset = pretraining_dataloader.pretraining_dataset(
        files, 64, FLAGS.max_seq_length, vocab_size=vocabulary.size,
        repeat=False, shuffle=False).take(FLAGS.batches)
    layers = masking_layers(vocabulary, FLAGS.max_seq_length, FLAGS.mask_prob)
    continuation = set(span_masking.continuation_token_ids(vocabulary.tokens))
    first_batch = next(iter(dataset))
    results = measure(dataset, layers, continuation)
    timings = milliseconds_per_batch(layers, first_batch)
  except errors.UserError as error:
    command_line.exit_with_error(error, FLAGS.verbose)
  print(f"{FLAGS.train_data}: length {FLAGS.max_seq_length}, mask_prob "
        f"{FLAGS.mask_prob}, {FLAGS.batches} batches of 64; span lengths "
        f"drawn from Geo(0.2) clipped at 10 words (mean "
        f"{span_masking.mean_span_length():.2f} words)")
  print("scheme       masked  [MASK]  budget met  span words  span tokens  "
        "longest  ms/batch")
  for scheme, result in results.items():
    print(f"{scheme:<12} {100 * result['masked_share']:5.1f}%  "
          f"{100 * result['mask_token_share']:5.1f}%  "
          f"{100 * result['budget_met_share']:9.1f}%  "
          f"{result['mean_span_words']:10.2f}  "
          f"{result['mean_span_tokens']:11.2f}  "
          f"{result['longest_span_words']:7d}  {timings[scheme]:8.1f}")


if __name__ == "__main__":
  _define_flags()
  flags.mark_flags_as_required(["train_data", "vocab_file"])
  app.run(main)
