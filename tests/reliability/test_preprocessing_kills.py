"""Preprocessing killed (SIGKILL) at random points, then rerun, gives the bytes
of an uninterrupted run; in between, nothing on disk looks complete and the
pretraining loader refuses the unfinished directory."""

import json
import pathlib
import random
import signal
import time

import pytest

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from tests.reliability import cli
from tests.reliability.conftest import SEQ_LENGTH
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import shard_writer

_NUM_SHARDS = 16
_SHARD_GLOB = f"{shard_writer.SHARD_PREFIX}-*-of-{_NUM_SHARDS:05d}"
_KILLS = 3
_TIMEOUT_SECONDS = 300


def _build_args(corpus, output_dir):
  return ("tfrecords_tools.build_pretraining_dataset",
          f"--input={corpus.large}", f"--vocab_file={corpus.vocab_file}",
          f"--output_dir={output_dir}", f"--max_seq_length={SEQ_LENGTH}",
          f"--num_shards={_NUM_SHARDS}", "--num_workers=0", "--seed=3")


def _files(directory):
  """`{name: bytes}` of every file, hidden state included."""
  return {str(path.relative_to(directory)): path.read_bytes()
          for path in sorted(directory.rglob("*")) if path.is_file()}


def _complete_shards(directory):
  return sorted(directory.glob(_SHARD_GLOB))


def _committed_units(directory):
  """Units of the corpus the build's last commit covers (0 before any)."""
  try:
    state = json.loads((directory / ".build_state" / "state.json").read_text())
  except (OSError, ValueError):
    return 0
  return state["progress"]["next_unit"]


def _kill_at_random_point(corpus, output_dir, rng):
  """Starts the tool; SIGKILLs it once it has committed `k` more times (k
  random in 0..3; 0: while it appends its first new records), a random few
  milliseconds later. (Every shard takes examples to the end of the corpus,
  so no shard is complete before the last commit.)"""
  more = rng.randint(0, 3)
  started = time.time()
  seen = {_committed_units(output_dir)}

  def reached():
    seen.add(_committed_units(output_dir))
    if more:
      return len(seen) > more
    return any(path.stat().st_mtime > started
               for path in output_dir.glob("*.tmp"))

  process = cli.start(*_build_args(corpus, output_dir))
  deadline = time.monotonic() + _TIMEOUT_SECONDS
  while not reached():
    assert process.poll() is None, process.stderr.read()
    assert time.monotonic() < deadline, "the tool made no progress"
    time.sleep(0.002)
  time.sleep(rng.uniform(0, 0.03))
  assert process.poll() is None, "the tool finished before the kill"
  process.send_signal(signal.SIGKILL)
  process.wait()
  process.stderr.close()


def _assert_unfinished_and_clean(output_dir, reference):
  assert not (output_dir / dataset_info_lib.DATASET_INFO_FILENAME).exists()
  complete = _complete_shards(output_dir)
  assert len(complete) < _NUM_SHARDS, "the kill came after the last shard"
  for path in complete:  # A final name is never on a partial shard.
    assert path.read_bytes() == reference[path.name], path
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="unfinished build.*rerun the same"):
    pretraining_dataloader.pretraining_dataset(str(output_dir), 4, SEQ_LENGTH)
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="no pretraining files match"):
    pretraining_files.resolve_files(str(output_dir / "*.tmp"))


@pytest.mark.slow
def test_random_kills_then_rerun_give_the_uninterrupted_bytes(corpus,
                                                              tmp_path):
  uninterrupted = tmp_path / "uninterrupted"
  build_pretraining_dataset.build_pretraining_dataset(
      str(corpus.large), str(corpus.vocab_file), str(uninterrupted),
      max_seq_length=SEQ_LENGTH, num_shards=_NUM_SHARDS, num_workers=0,
      seed=3)
  reference = _files(uninterrupted)
  killed = tmp_path / "killed"
  rng = random.Random(8)
  for _ in range(_KILLS):
    _kill_at_random_point(corpus, killed, rng)
    _assert_unfinished_and_clean(killed, reference)
  completed = cli.run(*_build_args(corpus, killed), timeout=_TIMEOUT_SECONDS)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert _files(killed) == reference  # dataset_info.json included.
  info = dataset_info_lib.read_dataset_info(str(killed))
  dataset = pretraining_dataloader.pretraining_dataset(
      str(killed), 1, SEQ_LENGTH, vocab_size=corpus.vocab_size, repeat=False,
      shuffle=False, vocab_file=str(corpus.vocab_file))
  assert sum(1 for _ in dataset) == info.num_examples


def test_death_while_writing_dataset_info_leaves_an_unfinished_build(
    corpus, dataset_dir, tmp_path, monkeypatch):
  """The last step's window: every shard renamed, dataset_info.json.tmp
  written but not yet renamed."""
  output_dir = tmp_path / "data"

  def write_then_die(info, directory):
    del info  # Unused.
    (pathlib.Path(directory) /
     (dataset_info_lib.DATASET_INFO_FILENAME + ".tmp")).write_text(
         '{"vocab_sha256": "')
    raise KeyboardInterrupt

  monkeypatch.setattr(dataset_info_lib.DatasetInfo, "write", write_then_die)
  with pytest.raises(KeyboardInterrupt):
    build_pretraining_dataset.build_pretraining_dataset(
        str(corpus.small), str(corpus.vocab_file), str(output_dir),
        max_seq_length=SEQ_LENGTH, num_shards=2, num_workers=0, seed=0)
  monkeypatch.undo()
  assert len(list(output_dir.glob("pretrain_data.tfrecord-*-of-00002"))) == 2
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="unfinished build"):
    pretraining_dataloader.pretraining_dataset(str(output_dir), 4, SEQ_LENGTH)
  build_pretraining_dataset.build_pretraining_dataset(
      str(corpus.small), str(corpus.vocab_file), str(output_dir),
      max_seq_length=SEQ_LENGTH, num_shards=2, num_workers=0, seed=0)
  assert _files(output_dir) == _files(dataset_dir)
