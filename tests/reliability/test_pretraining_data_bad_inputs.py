"""Pretraining data that does not fit: another vocabulary, another sequence
length, a truncated TFRecord, an unfinished build, and a gin typo. Checked
through the loader's public function and through the programs that read
records (`official_electra.train` with gin/tiny.gin, and
`official_electra.benchmark.input_pipeline`), as subprocesses: a non-zero exit,
one `error: ...` line naming the file and the fix, no traceback, and no
checkpoint written."""

import shutil

import pytest
import tensorflow as tf

from official_electra import command_line
from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from tests.reliability import cli
from tests.reliability.conftest import SEQ_LENGTH

TRAIN = "official_electra.train"
INPUT_PIPELINE = "official_electra.benchmark.input_pipeline"
_INFO = dataset_info_lib.DATASET_INFO_FILENAME


def _train_args(root, name, data_dir, vocab_file, vocab_size, *bindings):
  return (TRAIN, "--gin_file=gin/tiny.gin",
          f"--gin_bindings=encoder.vocab_size={vocab_size}",
          "--gin_bindings=run_pretraining.num_train_steps=2",
          *[f"--gin_bindings={binding}" for binding in bindings],
          f"--train_data={data_dir}", f"--vocab_file={vocab_file}",
          f"--model_dir={root / ('run_' + name)}", "--strategy=one_device",
          "--noprogress_bar")


@pytest.fixture(scope="module")
def bad_data(corpus, dataset_dir, tmp_path_factory):
  """Variants of the finished dataset and its vocabulary."""
  root = tmp_path_factory.mktemp("bad_pretraining_data")
  tokens = corpus.vocab_file.read_text(encoding="utf-8").splitlines()
  swapped = tokens[:10] + [tokens[11], tokens[10]] + tokens[12:]
  (root / "same_size_vocab.txt").write_text("\n".join(swapped) + "\n",
                                            encoding="utf-8")
  truncated = shutil.copytree(dataset_dir, root / "truncated")
  shard = sorted(truncated.glob("pretrain_data.tfrecord-*"))[1]
  shard.write_bytes(shard.read_bytes()[:-100])
  unfinished = shutil.copytree(dataset_dir, root / "unfinished")
  (unfinished / _INFO).unlink()
  (unfinished / ".build_state").mkdir()
  return root


@pytest.fixture(scope="module")
def runs(corpus, dataset_dir, bad_data):
  vocab, size = corpus.vocab_file, corpus.vocab_size
  return cli.run_all({
      "train_same_size_vocab": _train_args(
          bad_data, "same_size_vocab", dataset_dir,
          bad_data / "same_size_vocab.txt", size),
      "train_sequence_length": _train_args(
          bad_data, "sequence_length", dataset_dir, vocab, size,
          "run_pretraining.max_seq_length=32"),
      "train_truncated": _train_args(bad_data, "truncated",
                                     bad_data / "truncated", vocab, size),
      "train_gin_typo": _train_args(bad_data, "gin_typo", dataset_dir, vocab,
                                    size, "run_pretraining.learning_rat=1e-3"),
      "input_pipeline_unfinished": (
          INPUT_PIPELINE, f"--file_pattern={bad_data / 'unfinished'}",
          f"--max_seq_length={SEQ_LENGTH}", "--batch_size=2"),
  })


def _no_checkpoint(model_dir):
  assert tf.train.latest_checkpoint(str(model_dir)) is None
  assert not list(model_dir.rglob("*.index"))


# The loader's public function.


def test_loader_other_vocabulary_of_the_same_size(corpus, dataset_dir,
                                                  bad_data):
  with pytest.raises(dataset_info_lib.DatasetInfoError, match=(
      f"{dataset_dir / _INFO}: the data was built with another vocabulary.*"
      "same_size_vocab.txt.*pass the vocabulary the data was built with")):
    pretraining_dataloader.pretraining_dataset(
        str(dataset_dir), 4, SEQ_LENGTH, vocab_size=corpus.vocab_size,
        vocab_file=str(bad_data / "same_size_vocab.txt"))


def test_loader_vocabulary_of_another_size(corpus, dataset_dir):
  with pytest.raises(dataset_info_lib.DatasetInfoError, match=(
      f"{dataset_dir / _INFO}: the data was tokenized with a vocabulary of "
      f"{corpus.vocab_size} tokens but the model has vocab_size="
      f"{corpus.vocab_size + 3}: use the same vocabulary")):
    pretraining_dataloader.pretraining_dataset(
        str(dataset_dir), 4, SEQ_LENGTH, vocab_size=corpus.vocab_size + 3)


def test_loader_records_of_another_sequence_length(dataset_dir):
  with pytest.raises(dataset_info_lib.DatasetInfoError, match=(
      f"{dataset_dir / _INFO}: the records have max_seq_length={SEQ_LENGTH}.*"
      f"set max_seq_length={SEQ_LENGTH} or rebuild")):
    pretraining_dataloader.pretraining_dataset(str(dataset_dir), 4, 32)


def test_loader_truncated_record(bad_data):
  with pytest.raises(pretraining_dataloader.PretrainingDataError, match=(
      r"pretrain_data.tfrecord-00001-of-00002 has \d+ bytes.*truncated.*"
      "rebuild the dataset")):
    pretraining_dataloader.pretraining_dataset(str(bad_data / "truncated"), 4,
                                               SEQ_LENGTH)


def test_loader_the_same_vocabulary_passes(corpus, dataset_dir):
  dataset = pretraining_dataloader.pretraining_dataset(
      str(dataset_dir), 4, SEQ_LENGTH, vocab_size=corpus.vocab_size,
      vocab_file=str(corpus.vocab_file), repeat=False)
  batch = next(iter(dataset))
  assert batch["input_word_ids"].shape == (4, SEQ_LENGTH)


# The programs.


@pytest.mark.slow
def test_train_other_vocabulary_of_the_same_size(runs, dataset_dir, bad_data):
  cli.assert_error(runs["train_same_size_vocab"].result(),
                   dataset_dir / _INFO, "same_size_vocab.txt",
                   "pass the vocabulary the data was built with")
  _no_checkpoint(bad_data / "run_same_size_vocab")


@pytest.mark.slow
def test_train_records_of_another_sequence_length(runs, dataset_dir,
                                                  bad_data):
  cli.assert_error(runs["train_sequence_length"].result(),
                   dataset_dir / _INFO, f"max_seq_length={SEQ_LENGTH}",
                   "rebuild the data")
  _no_checkpoint(bad_data / "run_sequence_length")


@pytest.mark.slow
def test_train_truncated_record(runs, bad_data):
  cli.assert_error(runs["train_truncated"].result(),
                   bad_data / "truncated" / "pretrain_data.tfrecord-00001-of-00002",
                   "truncated", "rebuild the dataset")
  _no_checkpoint(bad_data / "run_truncated")


@pytest.mark.slow
def test_train_gin_unknown_parameter(runs, bad_data):
  completed = runs["train_gin_typo"].result()
  assert completed.returncode == command_line.USER_ERROR_EXIT_STATUS
  cli.assert_error(completed, "error: gin config ", "gin/tiny.gin",
                   "--gin_bindings", "learning_rat", "fix the name")
  assert not (bad_data / "run_gin_typo").exists()


@pytest.mark.slow
def test_input_pipeline_unfinished_build(runs, bad_data):
  cli.assert_error(runs["input_pipeline_unfinished"].result(),
                   bad_data / "unfinished", "unfinished build",
                   "rerun the same")
