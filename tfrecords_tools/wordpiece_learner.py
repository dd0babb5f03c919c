"""Learns a WordPiece vocabulary: tensorflow-text's algorithm, made fast.

`learn` returns exactly the token list that tensorflow-text's
`tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn`
returns for the same arguments (tests/tfrecords_tools/test_wordpiece_learner.py
compares the two), many times faster. This is our own implementation of that
algorithm, written from its description below.

The algorithm
-------------
Input words are filtered first: words longer than `max_token_length` and
reserved tokens are dropped; the alphabet is the `max_unique_chars` characters
of highest total count (ties: the smaller character); words with a character
outside it are dropped; of the rest, the `max_input_tokens` most frequent are
kept (ties: the input order).

A binary search then looks for a count threshold `t` between the clipped
`lower_thresh` and `upper_thresh` whose vocabulary has at most `vocab_size`
tokens and at least `vocab_size * (1 - slack_ratio)`. For one threshold the
vocabulary comes from `num_iterations` rounds. Each round splits every word
into *pieces*: a piece is the rest of the word from one split point to its
end, written with the joiner (`##`) in front unless it starts the word. Round
0 splits at every position; later rounds split where the previous round's
vocabulary segments the word greedily, longest match first from the left.
Every prefix of every piece gets the word's count; going from the longest
candidates to the shortest, each candidate whose count is at least `t` is
kept, and its count is then subtracted from every shorter prefix of it. The
kept candidates, plus every character and joined character of the words, are
the round's vocabulary. The final list is the reserved tokens, the characters
in sorted order, then the round's tokens by count (highest first, ties in
string order), each token once.

Why this is fast
----------------
* The subtraction telescopes. A candidate `p` starts with the count of all the
  pieces that have it as a prefix; once each longer candidate has had its
  final count subtracted, what is left to `p` is the count of the pieces equal
  to `p` itself. So a candidate's final count is simply the total count of the
  pieces that *are* it: no prefix is ever expanded, and round 0's counts (one
  per distinct suffix of a word) do not depend on the threshold, so they are
  computed once for the whole search. Prefixes that are never whole pieces end
  at count 0; they only matter for a threshold of 0 or less, where they are
  added back.
* A piece's own split points depend only on the piece, so pieces are counted
  per distinct piece: every word's first piece is the word, its second is what
  the greedy match leaves of it, and so on; the pieces are visited from the
  longest to the shortest, each passing its accumulated count on to the piece
  that it leaves, so a suffix shared by many words is segmented once.
* Joined pieces are matched against the token bodies after the joiner, so the
  joiner is never concatenated in the inner loops.
* A round whose vocabulary equals the previous round's leaves it unchanged, so
  the remaining rounds are skipped.

The two sides of a token string: `##ing` is the token of the joined piece
`ing`, and also of a word-initial piece `##ing` if a word starts with `##`.
Like tensorflow-text, a token kept from both keeps the joined piece's count.
"""

import bisect
import operator
from typing import Iterable, Mapping, Optional, Union

WordCounts = Union[Mapping[str, int], Iterable[tuple[str, int]]]


def learn(word_counts: WordCounts,
          vocab_size: int,
          reserved_tokens: list[str],
          *,
          upper_thresh: Optional[int] = int(1e7),
          lower_thresh: Optional[int] = 10,
          num_iterations: int = 4,
          max_input_tokens: Optional[int] = int(5e6),
          max_token_length: int = 50,
          max_unique_chars: int = 1000,
          slack_ratio: float = 0.05,
          include_joiner_token: bool = True,
          joiner: str = "##") -> list[str]:
  """Learns a WordPiece vocabulary from word counts.

  Same arguments, defaults and result as tensorflow-text's
  `wordpiece_tokenizer_learner_lib.learn` (see the module docstring).

  Args:
    word_counts: a mapping from word to count, or (word, count) pairs (a word
      may repeat; its counts add up). Read once. Counts are integers.
    vocab_size: the largest vocabulary size wanted.
    reserved_tokens: tokens that start the vocabulary, in this order.
    upper_thresh: the highest count threshold searched (clipped to the highest
      count); None for the highest count.
    lower_thresh: the lowest count threshold searched (raised to the lowest
      count); None for the lowest count.
    num_iterations: rounds of segmentation and counting per threshold.
    max_input_tokens: how many of the most frequent words (after the other
      filters) are learnt from; None or -1 for all of them.
    max_token_length: longer words are ignored.
    max_unique_chars: the alphabet size; words with rarer characters are
      ignored.
    slack_ratio: a vocabulary of `vocab_size * (1 - slack_ratio)` to
      `vocab_size` tokens ends the search.
    include_joiner_token: whether pieces inside a word get the joiner.
    joiner: the prefix of word-internal pieces.

  Returns:
    The vocabulary's tokens in id order.

  Raises:
    ValueError: `word_counts` is empty.
  """
  entries = list(word_counts.items() if isinstance(word_counts, Mapping)
                 else word_counts)
  if not entries:
    raise ValueError("word_counts is empty: there is nothing to learn from")
  lower, upper = _search_bounds(entries, lower_thresh, upper_thresh)
  words = _select_words(entries, set(reserved_tokens), max_token_length,
                        max_unique_chars, max_input_tokens)
  learner = _ThresholdLearner(words, num_iterations, include_joiner_token,
                              joiner)
  slack = max(slack_ratio * vocab_size, 0)
  while True:
    threshold = (upper + lower) // 2
    counts = learner.token_counts(threshold)
    vocabulary = _ordered_vocabulary(reserved_tokens, learner.chars, counts)
    size = len(vocabulary)
    if ((size <= vocab_size and vocab_size - size <= slack)
        or lower >= upper or threshold <= 1):
      return vocabulary
    if size > vocab_size:
      lower = threshold + 1
    else:
      upper = threshold - 1


def _search_bounds(entries, lower_thresh, upper_thresh):
  """The search range: the thresholds clipped to the counts of all entries.

  All entries count here, also those that `_select_words` drops.
  """
  counts = [count for _, count in entries]
  highest, lowest = max(counts), min(counts)
  upper = highest if upper_thresh is None else min(highest, upper_thresh)
  lower = lowest if lower_thresh is None else max(lowest, lower_thresh)
  return lower, upper


def _select_words(entries, reserved, max_token_length, max_unique_chars,
                  max_input_tokens) -> dict[str, int]:
  """The words learnt from, with their summed counts (see the module doc).

  Empty words pass the filters (and take a place among `max_input_tokens`)
  but contribute no piece, so they are left out of the result.
  """
  candidates = [(word, count) for word, count in entries
                if len(word) <= max_token_length and word not in reserved]
  alphabet = set("".join(word for word, _ in candidates))
  if len(alphabet) > max(max_unique_chars, 0):
    char_counts = {}
    for word, count in candidates:
      for char in word:
        char_counts[char] = char_counts.get(char, 0) + count
    by_frequency = sorted(char_counts.items(),
                          key=lambda item: (-item[1], item[0]))
    alphabet = {char for char, _ in by_frequency[:max(max_unique_chars, 0)]}
    candidates = [(word, count) for word, count in candidates
                  if alphabet.issuperset(word)]
  limit = None if max_input_tokens in (None, -1) else max_input_tokens
  if limit is not None:
    # Most frequent first; `sorted` is stable, so ties keep the input order.
    candidates = sorted(candidates, key=operator.itemgetter(1), reverse=True)
    candidates = candidates[:max(limit, 0)]
  words = {}
  for word, count in candidates:
    if word:
      words[word] = words.get(word, 0) + count
  return words


def _ordered_vocabulary(reserved_tokens, chars, counts) -> list[str]:
  """Reserved tokens, sorted characters, then tokens by count; no repeats."""
  by_count = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
  ordered = list(reserved_tokens) + sorted(chars)
  ordered.extend(token for token, _ in by_count)
  return list(dict.fromkeys(ordered))


def _with_zero_prefixes(pieces: dict[str, int]) -> dict[str, int]:
  """`pieces` plus every prefix of a piece that is not one, at count 0."""
  extended = dict(pieces)
  for piece in pieces:
    for end in range(1, len(piece)):
      extended.setdefault(piece[:end], 0)
  return extended


class _SortedPieces:
  """Piece counts, sorted once to answer "which reach `t`?" for many `t`."""

  def __init__(self, pieces: dict[str, int]):
    self._pieces = pieces
    by_count = sorted(pieces.items(), key=operator.itemgetter(1),
                      reverse=True)
    self._names = [piece for piece, _ in by_count]
    self._negated_counts = [-count for _, count in by_count]
    self._with_zero_prefixes = None

  def reaching(self, threshold) -> dict[str, int]:
    """The pieces (and prefixes, for `threshold <= 0`) counted >= threshold."""
    if threshold <= 0:
      if self._with_zero_prefixes is None:
        self._with_zero_prefixes = _with_zero_prefixes(self._pieces)
      return _reaching(self._with_zero_prefixes, threshold)
    end = bisect.bisect_right(self._negated_counts, -threshold)
    return {piece: self._pieces[piece] for piece in self._names[:end]}


def _reaching(pieces: dict[str, int], threshold) -> dict[str, int]:
  """The pieces counted at least `threshold` (see `_SortedPieces.reaching`)."""
  if threshold <= 0:
    pieces = _with_zero_prefixes(pieces)
  return {piece: count for piece, count in pieces.items()
          if count >= threshold}


class _ThresholdLearner:
  """The rounds of one threshold, with the threshold-free work done once.

  Pieces are kept in two tables: *initial* pieces (the whole word; the token
  is the piece) and *joined* pieces (after a split point; the token is the
  joiner and the piece). Without a joiner (`include_joiner_token=False` or an
  empty joiner) a piece's token is the piece wherever it starts, so all pieces
  are initial ones.
  """

  def __init__(self, words: dict[str, int], num_iterations: int,
               include_joiner_token: bool, joiner: str):
    self._words = words
    self._num_iterations = num_iterations
    self._include_joiner_token = include_joiner_token
    self._joiner = joiner
    self._joins = include_joiner_token and bool(joiner)
    self._longest_word = max(map(len, words), default=0)
    self.chars = set("".join(words))
    # Only words starting with the joiner can match a joined piece's token
    # from their first character.
    self._joiner_starts_words = self._joins and any(
        word.startswith(joiner) for word in words)
    initial, joined = self._first_round_pieces()
    self._first_round_initial = _SortedPieces(initial)
    self._first_round_joined = _SortedPieces(joined)

  def _first_round_pieces(self):
    """Round 0's (initial, joined) tables: each suffix of a word is a piece."""
    initial = dict(self._words)
    joined = {} if self._joins else initial
    for word, count in self._words.items():
      for start in range(1, len(word)):
        suffix = word[start:]
        joined[suffix] = joined.get(suffix, 0) + count
    if not self._joins:
      return initial, {}
    return initial, joined

  def token_counts(self, threshold) -> dict[str, int]:
    """The last round's tokens and counts (characters included) at `t`."""
    if self._num_iterations <= 0:
      return self._token_counts({}, {})
    initial = self._first_round_initial.reaching(threshold)
    joined = self._first_round_joined.reaching(threshold)
    matcher = self._matcher(initial, joined)
    for _ in range(1, self._num_iterations):
      all_initial, all_joined = self._segmented_pieces(matcher)
      initial = _reaching(all_initial, threshold)
      joined = _reaching(all_joined, threshold)
      next_matcher = self._matcher(initial, joined)
      if next_matcher == matcher:
        break  # The next rounds would repeat this one.
      matcher = next_matcher
    return self._token_counts(initial, joined)

  def _token_counts(self, initial, joined) -> dict[str, int]:
    """Token strings and counts; a joined piece's count wins a collision."""
    counts = dict(initial)
    joiner = self._joiner
    for piece, count in joined.items():
      counts[joiner + piece] = count
    for char in self.chars:
      counts.setdefault(char, 1)
      if self._include_joiner_token:
        counts.setdefault(joiner + char, 1)
    return counts

  def _matcher(self, initial, joined):
    """What greedy segmentation looks up, for a round's kept pieces.

    Returns:
      (initial_tokens, joined_bodies): the token strings a word's first piece
      matches, and the strings that follow the joiner in a token (matched by
      the later pieces). Without a joiner the two are the same set.
    """
    tokens = set(initial)
    tokens.update(self.chars)
    if not self._joins:
      return tokens, tokens
    skip = len(self._joiner)
    bodies = set(joined)
    bodies.update(self.chars)
    bodies.update(token[skip:] for token in tokens
                  if token.startswith(self._joiner))
    if self._joiner_starts_words:
      tokens.update(self._joiner + body for body in bodies)
    return tokens, bodies

  def _segmented_pieces(self, matcher):
    """A later round's piece counts: (initial, joined) tables.

    Each word's greedy segmentation is followed one piece at a time; the
    pieces of one length are all visited before any shorter one, so a piece's
    count is complete before it passes it on to the piece it leaves.
    """
    initial_tokens, joined_bodies = matcher
    by_length = [{} for _ in range(self._longest_word + 1)]
    if self._joins:
      initial = self._words
      longest = max(map(len, initial_tokens), default=0)
      for word, count in initial.items():
        # The longest prefix in the tokens (every single character is one, so
        # a match is found), inlined: this loop and the next are the hot spots.
        length = len(word)
        end = length if length < longest else longest
        while end > 1 and word[:end] not in initial_tokens:
          end -= 1
        if end < length:
          pieces = by_length[length - end]
          rest = word[end:]
          pieces[rest] = pieces.get(rest, 0) + count
    else:
      for word, count in self._words.items():
        by_length[len(word)][word] = count
    longest = max(map(len, joined_bodies), default=0)
    for length in range(self._longest_word, 1, -1):
      for piece, count in by_length[length].items():
        end = length if length < longest else longest
        while end > 1 and piece[:end] not in joined_bodies:
          end -= 1
        if end < length:
          pieces = by_length[length - end]
          rest = piece[end:]
          pieces[rest] = pieces.get(rest, 0) + count
    joined = {}
    for pieces in by_length:
      joined.update(pieces)
    if not self._joins:
      return joined, {}
    return initial, joined
