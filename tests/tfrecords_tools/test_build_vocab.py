"""Tests of build_vocab: special tokens first, usable by the tokenizer."""

import pytest

from official_electra.tokenization import WordpieceTokenizer
from tfrecords_tools import build_vocab
from tfrecords_tools.errors import BuildError


def test_learned_vocabulary_tokenizes_its_corpus(tmp_path):
  corpus = tmp_path / "corpus.txt"
  corpus.write_text(("The quick brown fox jumps over the lazy dog. Naïve "
                     "CAFÉ owners jumped, quickly!\n\n") * 30)
  vocab = tmp_path / "vocab.txt"
  tokens = build_vocab.build_vocab(str(corpus), str(vocab), vocab_size=120,
                                   lower_case=True)
  assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert len(tokens) <= 120 and "naive" in tokens and "cafe" in tokens
  tokenizer = WordpieceTokenizer(vocab, lower_case=True)
  ids = tokenizer.tokenize_to_numpy(["The lazy dog jumped."])[0]
  assert tokenizer.unk_id not in ids.tolist()
  assert not list(tmp_path.glob("*.tmp"))


def test_errors(tmp_path):
  (tmp_path / "empty.txt").write_text("")
  with pytest.raises(BuildError, match="no words"):
    build_vocab.build_vocab(str(tmp_path / "empty.txt"),
                            str(tmp_path / "v.txt"), 100, True)
  with pytest.raises(BuildError, match="leaves no room"):
    build_vocab.build_vocab(str(tmp_path / "empty.txt"),
                            str(tmp_path / "v.txt"), 5, True)
