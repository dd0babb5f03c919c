"""Our WordPiece learner returns exactly what tensorflow-text's learner returns.

`tfrecords_tools.wordpiece_learner.learn` is a faster implementation of
`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn`;
the vocabulary the data tool writes must not change with it. Both are run on
the same inputs (random words, words that collide with the joiner, reserved
tokens, rare characters, every argument's edge values, and a sample of the
shared English corpus when it is present) and the token lists compared whole.
"""

import collections
import glob
import gzip
import os
import re

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import pytest
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as tf_text_learner

from tests import conftest
from tfrecords_tools import wordpiece_learner

_RESERVED = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_CORPUS = str(conftest.SHARED_DIR / "data" / "corpus")


def _both(word_counts, vocab_size, reserved=_RESERVED, **kwargs):
  ours = wordpiece_learner.learn(list(word_counts), vocab_size, reserved,
                                 **kwargs)
  theirs = tf_text_learner.learn(list(word_counts), vocab_size, reserved,
                                 **kwargs)
  return ours, theirs


# Few letters, so that words share prefixes and suffixes and the search has
# pieces to keep; '#' makes words that start with the joiner.
_WORD = st.text(st.sampled_from("abcde#éx"), min_size=1, max_size=9)
# Counts of 0 let the search reach a threshold of 0, where prefixes that are
# never whole pieces count.
_WORD_COUNTS = st.lists(st.tuples(_WORD, st.integers(0, 60)), min_size=1,
                        max_size=60)


@settings(max_examples=400, deadline=None)
@given(word_counts=_WORD_COUNTS,
       vocab_size=st.integers(6, 80),
       lower_thresh=st.one_of(st.none(), st.integers(-2, 30)),
       upper_thresh=st.one_of(st.none(), st.integers(0, 3),
                              st.integers(0, 200)),
       num_iterations=st.integers(0, 5),
       max_input_tokens=st.one_of(st.just(-1), st.integers(0, 40)),
       max_token_length=st.integers(1, 10),
       max_unique_chars=st.integers(0, 9),
       slack_ratio=st.sampled_from([0.0, 0.05, 0.3, 1.0]),
       include_joiner_token=st.booleans(),
       joiner=st.sampled_from(["##", "#", "@@"]))
def test_same_vocabulary_as_tensorflow_text(word_counts, vocab_size, **kwargs):
  ours, theirs = _both(word_counts, vocab_size, **kwargs)
  assert ours == theirs


@settings(max_examples=40, deadline=None)
@given(word_counts=_WORD_COUNTS, vocab_size=st.integers(6, 80),
       reserved=st.lists(st.sampled_from(["[PAD]", "a", "ab", "##b", "#"]),
                         unique=True))
def test_reserved_tokens_that_are_also_words(word_counts, vocab_size,
                                             reserved):
  ours, theirs = _both(word_counts, vocab_size, reserved, lower_thresh=1)
  assert ours == theirs


_JOINER_WORD = st.text(st.sampled_from("ab#"), min_size=1, max_size=7)


@settings(max_examples=300, deadline=None)
@given(word_counts=st.lists(st.tuples(_JOINER_WORD, st.integers(1, 50)),
                            min_size=5, max_size=50),
       vocab_size=st.integers(10, 60),
       num_iterations=st.integers(2, 6))
def test_words_that_start_with_the_joiner(word_counts, vocab_size,
                                          num_iterations):
  # A word's first piece can then match a joined token ('#a' of the piece
  # 'a'), and a joined piece an initial token: both sides are looked up.
  ours, theirs = _both(word_counts, vocab_size, lower_thresh=1,
                       num_iterations=num_iterations, joiner="#")
  assert ours == theirs


def test_a_dict_and_pairs_give_the_same_vocabulary():
  counts = {"unaffable": 9, "affable": 12, "able": 40, "table": 30, "un": 7}
  from_dict = wordpiece_learner.learn(counts, 30, _RESERVED, lower_thresh=1)
  assert from_dict == tf_text_learner.learn(counts, 30, _RESERVED,
                                            lower_thresh=1)
  assert from_dict == wordpiece_learner.learn(list(counts.items()), 30,
                                              _RESERVED, lower_thresh=1)


def test_no_words_is_an_error():
  with pytest.raises(ValueError, match="empty"):
    wordpiece_learner.learn([], 30, _RESERVED)


def _corpus_word_counts(max_lines):
  paths = sorted(glob.glob(os.path.join(_CORPUS, "*.txt.gz")))
  if not paths:
    # Skips on a user's clone, fails in CI (which has ../shared).
    conftest.missing_shared_data(
        f"no corpus (*.txt.gz) at {os.path.normpath(_CORPUS)}: ../shared is "
        "absent in a user's clone")
  counts = collections.Counter()
  for path in paths:
    with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
      for index, line in enumerate(lines):
        if index >= max_lines:
          break
        counts.update(re.findall(r"\w+|[^\w\s]", line.lower()))
  return counts


def test_same_vocabulary_on_real_text():
  # One size: tensorflow-text's learner takes most of the suite's time here.
  word_counts = _corpus_word_counts(max_lines=3000)
  ours, theirs = _both(word_counts.items(), 300)
  assert len(ours) > 100
  assert ours == theirs
