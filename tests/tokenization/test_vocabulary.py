"""Tests of load_vocabulary: the clear errors and the checksum."""

import hashlib

import pytest

from official_electra.tokenization import load_vocabulary
from official_electra.tokenization import VocabularyError

_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_reads_tokens_and_sha256(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_bytes("\n".join(_SPECIALS + ["the", "##s", "é"]).encode() + b"\n")
  vocabulary = load_vocabulary(path)
  assert vocabulary.tokens == tuple(_SPECIALS + ["the", "##s", "é"])
  assert vocabulary.size == 8
  assert vocabulary.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_missing_file_names_the_file_and_the_fix(tmp_path):
  path = tmp_path / "nope.txt"
  with pytest.raises(VocabularyError, match=r"nope\.txt.*build_vocab"):
    load_vocabulary(path)


def test_missing_special_tokens_are_named(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\nthe\n")
  with pytest.raises(VocabularyError,
                     match=r"vocab\.txt lacks the special tokens \[SEP\] \[MASK\]"):
    load_vocabulary(path)


def test_duplicate_and_empty_and_binary_files(tmp_path):
  duplicate = tmp_path / "dup.txt"
  duplicate.write_text("\n".join(_SPECIALS + ["a", "a"]))
  with pytest.raises(VocabularyError, match=r"'a' twice \(lines 6 and 7\)"):
    load_vocabulary(duplicate)
  empty = tmp_path / "empty.txt"
  empty.write_text("")
  with pytest.raises(VocabularyError, match="empty"):
    load_vocabulary(empty)
  binary = tmp_path / "binary.txt"
  binary.write_bytes(b"\xff\xfe\x00")
  with pytest.raises(VocabularyError, match="not UTF-8"):
    load_vocabulary(binary)
