"""A dataset damaged after its build: a missing, an unlisted, a resized and a
corrupt shard (same size, other bytes), and a record that fails while training.

The build records every shard's size and sha256 in `dataset_info.json`; the
loader checks presence and sizes at every start and the checksums on request;
a rerun of the build redoes only the damaged shards, to the same bytes; a
record that fails in training stops the run with one line naming the shard,
the fix and the last good checkpoint, which stays as it was. The programs are
run as users run them (subprocesses)."""

import hashlib
import json
import os
import shutil

import pytest
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from tests.reliability import cli
from tests.reliability.conftest import SEQ_LENGTH
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools.errors import BuildError

TRAIN = "official_electra.train"
BUILD = "tfrecords_tools.build_pretraining_dataset"
_INFO = dataset_info_lib.DATASET_INFO_FILENAME
_SHARD_0 = "pretrain_data.tfrecord-00000-of-00002"
_SHARD_1 = "pretrain_data.tfrecord-00001-of-00002"


def _corrupt(path):
  """Flips one byte in the middle of the file (inside a record's data)."""
  data = bytearray(path.read_bytes())
  data[len(data) // 2] ^= 0xFF
  path.write_bytes(bytes(data))


def _copy(source, destination):
  """A copy of the folder `source` at `destination` (a pathlib.Path)."""
  shutil.copytree(source, destination)
  return destination


def _rebuild(corpus, output_dir):
  """The fixture's build command again (tests/reliability/conftest.py)."""
  return build_pretraining_dataset.build_pretraining_dataset(
      str(corpus.small), str(corpus.vocab_file), str(output_dir),
      max_seq_length=SEQ_LENGTH, num_shards=2, num_workers=0, seed=0)


def _train_args(model_dir, data_dir, corpus, *bindings):
  return (TRAIN, "--gin_file=gin/tiny.gin",
          f"--gin_bindings=encoder.vocab_size={corpus.vocab_size}",
          *[f"--gin_bindings={binding}" for binding in bindings],
          f"--train_data={data_dir}", f"--vocab_file={corpus.vocab_file}",
          f"--model_dir={model_dir}", "--strategy=one_device",
          "--noprogress_bar")


@pytest.fixture(scope="module")
def damaged(dataset_dir, tmp_path_factory):
  """Copies of the finished dataset, each damaged in one way."""
  root = tmp_path_factory.mktemp("damaged_datasets")
  missing = _copy(dataset_dir, root / "missing")
  (missing / _SHARD_0).unlink()
  unlisted = _copy(dataset_dir, root / "unlisted")
  shutil.copyfile(unlisted / _SHARD_1,
                  unlisted / "pretrain_data.tfrecord-00002-of-00002")
  corrupt = _copy(dataset_dir, root / "corrupt")
  _corrupt(corrupt / _SHARD_1)
  return root


# What the build records.


def test_the_build_records_every_shard_size_and_sha256(dataset_dir):
  info = dataset_info_lib.read_dataset_info(str(dataset_dir))
  assert info.shard_files == [_SHARD_0, _SHARD_1]
  for name, size, checksum in zip(info.shard_files, info.shard_sizes,
                                  info.shard_sha256):
    data = (dataset_dir / name).read_bytes()
    assert len(data) == size
    assert hashlib.sha256(data).hexdigest() == checksum


# The loader's checks at start.


def test_loader_missing_shard(damaged):
  with pytest.raises(pretraining_dataloader.PretrainingDataError, match=(
      f"{damaged / 'missing' / _SHARD_0} is missing .*{_INFO} lists it.*"
      "rebuild the dataset: rerun .*build_pretraining_dataset.*redoes only "
      "the damaged")):
    pretraining_dataloader.pretraining_dataset(str(damaged / "missing"), 4,
                                               SEQ_LENGTH)


def test_loader_unlisted_shard(damaged):
  with pytest.raises(pretraining_dataloader.PretrainingDataError, match=(
      "pretrain_data.tfrecord-00002-of-00002 is not one of the 2 shards .*"
      f"{_INFO} lists: move it out of {damaged / 'unlisted'}")):
    pretraining_dataloader.pretraining_dataset(str(damaged / "unlisted"), 4,
                                               SEQ_LENGTH)


def test_loader_finds_a_corrupt_shard_of_the_same_size_by_checksum(damaged):
  corrupt = str(damaged / "corrupt")
  # The cheap check (sizes) cannot see it ...
  pretraining_dataloader.pretraining_dataset(corrupt, 4, SEQ_LENGTH)
  # ... the checksums do.
  with pytest.raises(pretraining_dataloader.PretrainingDataError, match=(
      f"{damaged / 'corrupt' / _SHARD_1} has sha256 .* records .*the file is "
      "corrupt.*rebuild the dataset")):
    pretraining_dataloader.pretraining_dataset(corrupt, 4, SEQ_LENGTH,
                                               verify_checksums=True)


def test_find_unreadable_file_by_checksum_and_by_reading(damaged, tmp_path):
  files = pretraining_files.resolve_files(str(damaged / "corrupt"))
  assert files[1].endswith(_SHARD_1)
  assert pretraining_files.find_unreadable_file(files) == files[1]
  # Without recorded checksums (an older build) every record is read.
  old = _copy(damaged / "corrupt", tmp_path / "old")
  fields = json.loads((old / _INFO).read_text())
  del fields["shard_sha256"]
  (old / _INFO).write_text(json.dumps(fields))
  old_files = pretraining_files.resolve_files(str(old))
  assert pretraining_files.find_unreadable_file(old_files) == old_files[1]
  clean = pretraining_files.resolve_files(
      str(damaged / "missing"))  # one shard, intact
  assert pretraining_files.find_unreadable_file(clean) is None


# The build's repair.


def test_a_rerun_rebuilds_only_the_damaged_shards(corpus, dataset_dir,
                                                  tmp_path):
  for damage in ("corrupt", "missing", "truncated"):
    copy = _copy(dataset_dir, tmp_path / damage)
    intact_stat = os.stat(copy / _SHARD_0)
    if damage == "corrupt":
      _corrupt(copy / _SHARD_1)
    elif damage == "missing":
      (copy / _SHARD_1).unlink()
    else:
      (copy / _SHARD_1).write_bytes((copy / _SHARD_1).read_bytes()[:-7])
    info = _rebuild(corpus, copy)
    assert info == dataset_info_lib.read_dataset_info(str(dataset_dir))
    for name in (_SHARD_0, _SHARD_1):
      assert (copy / name).read_bytes() == (dataset_dir / name).read_bytes()
    # The intact shard was not rewritten.
    after = os.stat(copy / _SHARD_0)
    assert (after.st_ino, after.st_mtime_ns) == (intact_stat.st_ino,
                                                 intact_stat.st_mtime_ns)
    assert sorted(os.listdir(copy)) == sorted(os.listdir(dataset_dir))


def test_a_rerun_records_checksums_in_an_older_dataset(corpus, dataset_dir,
                                                       tmp_path):
  old = _copy(dataset_dir, tmp_path / "old")
  fields = json.loads((old / _INFO).read_text())
  del fields["shard_sha256"]
  (old / _INFO).write_text(json.dumps(fields))
  assert dataset_info_lib.read_dataset_info(str(old)).shard_sha256 == []
  info = _rebuild(corpus, old)
  assert info == dataset_info_lib.read_dataset_info(str(dataset_dir))
  assert dataset_info_lib.read_dataset_info(str(old)) == info


def test_a_rerun_refuses_an_unlisted_shard(corpus, damaged, tmp_path):
  copy = _copy(damaged / "unlisted", tmp_path / "unlisted")
  with pytest.raises(BuildError, match=(
      "pretrain_data.tfrecord-00002-of-00002 is not one of the 2 shards.*move "
      "it out of")):
    _rebuild(corpus, copy)
  assert (copy / "pretrain_data.tfrecord-00002-of-00002").exists()


# The programs.


def _checkpoint_files(model_dir):
  return {path.name: path.read_bytes() for path in model_dir.iterdir()
          if path.name.startswith("ckpt-") or path.name == "checkpoint"}


@pytest.fixture(scope="module")
def runs(corpus, dataset_dir, damaged, tmp_path_factory):
  """Each damaged dataset through `train` and `build_pretraining_dataset`,
  and a run whose data goes bad between two invocations."""
  root = tmp_path_factory.mktemp("integrity_runs")
  started = cli.run_all({
      "train_missing": _train_args(root / "run_missing", damaged / "missing",
                                   corpus, "run_pretraining.num_train_steps=2"),
      "train_unlisted": _train_args(
          root / "run_unlisted", damaged / "unlisted", corpus,
          "run_pretraining.num_train_steps=2"),
      "train_verified": _train_args(
          root / "run_verified", damaged / "corrupt", corpus,
          "run_pretraining.num_train_steps=2",
          "run_pretraining.verify_data_checksums=True"),
      "build_repair": (
          BUILD, f"--input={corpus.small}", f"--vocab_file={corpus.vocab_file}",
          f"--output_dir={_copy(damaged / 'corrupt', root / 'repair')}",
          f"--max_seq_length={SEQ_LENGTH}", "--num_shards=2",
          "--num_workers=0", "--seed=0"),
  })
  # Two steps on good data, a checkpoint at step 2; then a record goes bad.
  data = _copy(dataset_dir, root / "goes_bad")
  model_dir = root / "run_goes_bad"
  first = cli.run(*_train_args(model_dir, data, corpus,
                               "run_pretraining.num_train_steps=4",
                               "run_pretraining.stop_after_steps=2",
                               "run_pretraining.save_checkpoints_steps=2"))
  assert first.returncode == 0, first.stderr[-3000:]
  before = _checkpoint_files(model_dir)
  _corrupt(data / _SHARD_0)
  second = cli.run(*_train_args(model_dir, data, corpus,
                                "run_pretraining.num_train_steps=4",
                                "run_pretraining.save_checkpoints_steps=2"))
  results = {name: future.result() for name, future in started.items()}
  results.update(goes_bad=second, goes_bad_before=before,
                 goes_bad_after=_checkpoint_files(model_dir))
  return root, results


@pytest.mark.slow
def test_train_missing_shard(runs, damaged):
  root, results = runs
  cli.assert_error(results["train_missing"], damaged / "missing" / _SHARD_0,
                   "is missing", "rebuild the dataset", "redoes only")
  assert not (root / "run_missing").exists()


@pytest.mark.slow
def test_train_unlisted_shard(runs, damaged):
  root, results = runs
  cli.assert_error(results["train_unlisted"],
                   "pretrain_data.tfrecord-00002-of-00002",
                   "is not one of the 2 shards", "move it out of")
  assert not (root / "run_unlisted").exists()


@pytest.mark.slow
def test_train_verifies_checksums_before_any_work(runs, damaged):
  root, results = runs
  cli.assert_error(results["train_verified"], damaged / "corrupt" / _SHARD_1,
                   "the file is corrupt", "rebuild the dataset")
  assert not (root / "run_verified").exists()


@pytest.mark.slow
def test_train_a_record_that_fails_in_training(runs):
  root, results = runs
  line = cli.assert_error(
      results["goes_bad"], root / "goes_bad" / _SHARD_0,
      "a record cannot be read (corrupted record at", "training stopped",
      f"the last good checkpoint in {root / 'run_goes_bad'} is ckpt-2",
      "rebuild the dataset", "then rerun this command to resume")
  assert "Graph execution error" not in line
  # The last good checkpoint stays as it was; nothing later was written.
  assert results["goes_bad_after"] == results["goes_bad_before"]
  assert tf.train.latest_checkpoint(str(root / "run_goes_bad")).endswith(
      "ckpt-2")


@pytest.mark.slow
def test_build_command_repairs_the_corrupt_shard(runs, dataset_dir):
  root, results = runs
  completed = results["build_repair"]
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert f"{root / 'repair' / _SHARD_1}" in completed.stderr
  assert "rebuilding this shard" in completed.stderr
  assert "repaired 1 of 2 shards" in completed.stderr
  for name in (_SHARD_0, _SHARD_1, _INFO):
    assert ((root / "repair" / name).read_bytes() ==
            (dataset_dir / name).read_bytes())
