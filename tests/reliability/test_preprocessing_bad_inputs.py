"""Bad inputs to `tfrecords_tools.build_pretraining_dataset` and
`tfrecords_tools.build_vocab`, run as subprocesses: each ends with a non-zero
exit, one `error: ...` line naming the file and the fix, no traceback (unless
`--verbose`) and no partial output. Non-UTF-8 bytes are not an error by design:
they are replaced, counted and reported."""

import gzip
import json

import pytest

from official_electra.data import dataset_info as dataset_info_lib
from tests.reliability import cli
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab
from tfrecords_tools.errors import BuildError

BUILD = "tfrecords_tools.build_pretraining_dataset"
VOCAB = "tfrecords_tools.build_vocab"
_WORDS = ("the", "cat", "sat", "on", "a", "mat", "dog", "ran", ".")
_TEXT = "The cat sat on a mat.\nA dog ran.\n\nThe dog sat.\n"
_FIX_TEXT = "point it at UTF-8 text files"


def _build_args(root, name, corpus, vocab=None, *extra):
  return (BUILD, f"--input={corpus}",
          f"--vocab_file={vocab or root / 'vocab.txt'}",
          f"--output_dir={root / ('out_' + name)}", "--max_seq_length=16",
          "--num_shards=2", "--num_workers=0", *extra)


def _vocab_args(root, name, corpus, output=None):
  return (VOCAB, f"--input={corpus}",
          f"--output={output or root / ('vocab_' + name + '.txt')}",
          "--vocab_size=40")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  root = tmp_path_factory.mktemp("preprocessing_inputs")
  (root / "good.txt").write_text(_TEXT, encoding="utf-8")
  specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  (root / "vocab.txt").write_text("\n".join(specials + list(_WORDS)) + "\n",
                                  encoding="utf-8")
  (root / "vocab_without_specials.txt").write_text(
      "\n".join(["[PAD]", "[UNK]"] + list(_WORDS)) + "\n", encoding="utf-8")
  (root / "corrupt.txt.gz").write_bytes(gzip.compress(_TEXT.encode())[:-12])
  (root / "data.bin").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00" * 50)
  (root / "empty.txt").write_bytes(b"")
  (root / "latin1.txt").write_bytes(
      _TEXT.encode() + b"The na\xefve dog sat on a caf\xe9 mat.\n")
  (root / "taken").write_text("a file, not a folder")
  return root


@pytest.fixture(scope="module")
def runs(root):
  """Every program run of this module, started together."""
  return cli.run_all({
      "build_missing_input": _build_args(root, "missing_input",
                                         root / "missing" / "*.txt"),
      "build_unreadable": _build_args(root, "unreadable",
                                      root / "corrupt.txt.gz"),
      "build_binary": _build_args(root, "binary", root / "data.bin"),
      "build_empty": _build_args(root, "empty", root / "empty.txt"),
      "build_vocab_without_specials": _build_args(
          root, "vocab_without_specials", root / "good.txt",
          root / "vocab_without_specials.txt"),
      "build_missing_vocab_verbose": _build_args(
          root, "missing_vocab_verbose", root / "good.txt",
          root / "no_vocab.txt", "--verbose"),
      "build_non_utf8": _build_args(root, "non_utf8", root / "latin1.txt"),
      "vocab_missing_input": _vocab_args(root, "missing_input",
                                         root / "missing" / "*.txt"),
      "vocab_binary": _vocab_args(root, "binary", root / "data.bin"),
      "vocab_empty": _vocab_args(root, "empty", root / "empty.txt"),
      "vocab_non_utf8": _vocab_args(root, "non_utf8", root / "latin1.txt"),
  })


def _no_build_output(root, name):
  output_dir = root / f"out_{name}"
  assert not output_dir.exists() or not list(output_dir.iterdir()), list(
      output_dir.iterdir())


def _no_vocab_output(root, name):
  assert not list(root.glob(f"vocab_{name}.txt*"))


def test_build_missing_input(runs, root):
  cli.assert_error(runs["build_missing_input"].result(),
                   root / "missing" / "*.txt", "matches no file",
                   "check the path")
  _no_build_output(root, "missing_input")


def test_build_unreadable_input(runs, root):
  cli.assert_error(runs["build_unreadable"].result(),
                   f"cannot read {root / 'corrupt.txt.gz'}",
                   "fix or remove the file")
  _no_build_output(root, "unreadable")


def test_build_binary_input(runs, root):
  cli.assert_error(runs["build_binary"].result(),
                   f"{root / 'data.bin'} is binary", _FIX_TEXT)
  _no_build_output(root, "binary")


def test_build_empty_corpus(runs, root):
  cli.assert_error(runs["build_empty"].result(),
                   f"{root / 'empty.txt'} is empty", _FIX_TEXT)
  _no_build_output(root, "empty")


def test_build_vocabulary_without_special_tokens(runs, root):
  cli.assert_error(runs["build_vocab_without_specials"].result(),
                   root / "vocab_without_specials.txt",
                   "lacks the special tokens [CLS] [SEP] [MASK]",
                   "tfrecords_tools.build_vocab")
  _no_build_output(root, "vocab_without_specials")


def test_build_missing_vocabulary_with_verbose_shows_the_traceback(runs, root):
  completed = runs["build_missing_vocab_verbose"].result()
  assert completed.returncode != 0
  assert "Traceback" in completed.stderr
  assert "VocabularyError" in completed.stderr
  assert str(root / "no_vocab.txt") in completed.stderr
  _no_build_output(root, "missing_vocab_verbose")


def test_build_output_dir_that_is_a_file(root):
  # In process: the command line's handling of BuildError is shown above.
  with pytest.raises(BuildError, match=(
      f"cannot create --output_dir={root / 'taken'}.*pass a writable folder")):
    build_pretraining_dataset.build_pretraining_dataset(
        str(root / "good.txt"), str(root / "vocab.txt"), str(root / "taken"))
  assert (root / "taken").read_text() == "a file, not a folder"


def test_build_non_utf8_bytes_are_replaced_and_counted(runs, root):
  completed = runs["build_non_utf8"].result()
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "warning: 2 bytes were not UTF-8" in completed.stderr
  output_dir = root / "out_non_utf8"
  info = json.loads(
      (output_dir / dataset_info_lib.DATASET_INFO_FILENAME).read_text())
  assert info["num_replaced_bytes"] == 2
  assert info["num_documents"] == 2 and info["num_examples"] >= 2
  assert not list(output_dir.glob("*.tmp"))


def test_vocab_missing_input(runs, root):
  cli.assert_error(runs["vocab_missing_input"].result(),
                   root / "missing" / "*.txt", "matches no file",
                   "check the path")
  _no_vocab_output(root, "missing_input")


def test_vocab_unreadable_input(root):
  with pytest.raises(BuildError, match="cannot read .*corrupt.txt.gz.*fix or "
                     "remove the file"):
    build_vocab.build_vocab(str(root / "corrupt.txt.gz"),
                            str(root / "vocab_unreadable.txt"), 40, True)
  _no_vocab_output(root, "unreadable")


def test_vocab_binary_input(runs, root):
  cli.assert_error(runs["vocab_binary"].result(),
                   f"{root / 'data.bin'} is binary", _FIX_TEXT)
  _no_vocab_output(root, "binary")


def test_vocab_empty_corpus(runs, root):
  cli.assert_error(runs["vocab_empty"].result(),
                   f"{root / 'empty.txt'} is empty", _FIX_TEXT)
  _no_vocab_output(root, "empty")


def test_vocab_output_folder_missing(root):
  with pytest.raises(BuildError, match="no_folder does not exist; create it "
                     "first"):
    build_vocab.build_vocab(str(root / "good.txt"),
                            str(root / "no_folder" / "vocab.txt"), 40, True)
  assert not (root / "no_folder").exists()


def test_vocab_non_utf8_bytes_are_replaced_and_counted(runs, root):
  completed = runs["vocab_non_utf8"].result()
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "warning: 2 bytes were not UTF-8" in completed.stderr
  tokens = (root / "vocab_non_utf8.txt").read_text(encoding="utf-8").split()
  assert tokens[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
  assert "\ufffd" not in "".join(tokens)
