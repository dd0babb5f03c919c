"""A WordPiece vocabulary file: tokens, special-token ids and sha256."""

import dataclasses
import hashlib
import os

from official_electra import errors
from official_electra import files

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class VocabularyError(errors.UserError):
  """A vocabulary file that is missing or unusable; the message says the fix."""


@dataclasses.dataclass(frozen=True)
class Vocabulary:
  """The tokens of a vocabulary file, one per line, id = line number.

  Attributes:
    path: the file it was read from.
    tokens: the tokens in id order (each line stripped, as BERT reads it).
    sha256: hex sha256 of the file's bytes.
  """
  path: str
  tokens: tuple[str, ...]
  sha256: str

  @property
  def size(self) -> int:
    return len(self.tokens)

  def special_token_ids(self) -> dict[str, int]:
    """Ids of `[PAD] [UNK] [CLS] [SEP] [MASK]`, keyed by token text."""
    ids = {token: index for index, token in enumerate(self.tokens)}
    return {token: ids[token] for token in SPECIAL_TOKENS}


def load_vocabulary(path: str) -> Vocabulary:
  """Reads and checks a WordPiece vocabulary file.

  Args:
    path: a text file with one token per line (BERT's `vocab.txt` format).

  Returns:
    The `Vocabulary`.

  Raises:
    VocabularyError: if the file is missing, not UTF-8, empty, has a token
      twice or lacks one of `[PAD] [UNK] [CLS] [SEP] [MASK]`.
  """
  path = os.fspath(path)
  fix = ("pass --vocab_file=vocab.txt from BERT or build one with "
         "`python -m tfrecords_tools.build_vocab`")
  try:
    data = files.read_bytes(path)
  except OSError as error:
    raise VocabularyError(
        f"cannot read vocabulary file {path} ({error.strerror}): {fix}"
    ) from None
  try:
    text = data.decode("utf-8")
  except UnicodeDecodeError as error:
    raise VocabularyError(
        f"vocabulary file {path} is not UTF-8 text (byte {error.start}): "
        f"{fix}") from None
  lines = text.split("\n")
  if lines[-1] == "":
    lines.pop()
  tokens = tuple(line.strip() for line in lines)
  if not any(tokens):
    raise VocabularyError(f"vocabulary file {path} is empty: {fix}")
  first_line = {}
  for line_number, token in enumerate(tokens, start=1):
    if token in first_line:
      raise VocabularyError(
          f"vocabulary file {path} has {token!r} twice (lines "
          f"{first_line[token]} and {line_number}): keep one line per token")
    first_line[token] = line_number
  missing = [token for token in SPECIAL_TOKENS if token not in first_line]
  if missing:
    raise VocabularyError(
        f"vocabulary file {path} lacks the special tokens {' '.join(missing)}:"
        f" add one line for each (BERT puts them among its first lines) or "
        f"rebuild it with `python -m tfrecords_tools.build_vocab`")
  return Vocabulary(path=path, tokens=tokens,
                    sha256=hashlib.sha256(data).hexdigest())
