"""Tests of build_pretraining_dataset: records, accounting, round-robin
shards, bad input, determinism, and resuming after a kill."""

import bz2
import gzip
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_features
from official_electra.tokenization import VocabularyError
from official_electra.tokenization import WordpieceTokenizer
from tests.tfrecords_tools import shard_layouts
from tfrecords_tools import build_pretraining_dataset as build_lib
from tfrecords_tools import corpus_pass
from tfrecords_tools import corpus_reader
from tfrecords_tools import sample_corpus
from tfrecords_tools import shard_writer
from tfrecords_tools import unit_processor
from tfrecords_tools.errors import BuildError

_SEQ = 64
# Shards of `built`; its examples are not a multiple of it.
_NUM_SHARDS = 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
  path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
  sample_corpus.write_stdlib_corpus(str(path), 200_000)
  return path


@pytest.fixture(scope="module")
def built(corpus, bert_vocab_file, tmp_path_factory):
  output_dir = tmp_path_factory.mktemp("built")
  info = build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(output_dir),
      max_seq_length=_SEQ, num_shards=_NUM_SHARDS, num_workers=0, seed=3)
  return output_dir, info


def _records(output_dir):
  files = sorted(str(p) for p in output_dir.glob("pretrain_data.tfrecord-*"))
  return [r.numpy() for r in tf.data.TFRecordDataset(files)]


def _shard_records(output_dir, info):
  return [[r.numpy() for r in tf.data.TFRecordDataset(str(output_dir / name))]
          for name in info.shard_files]


def _shard_bytes(output_dir):
  return {p.name: p.read_bytes()
          for p in sorted(output_dir.glob("pretrain_data.tfrecord-*"))}


def _files(directory):
  """`{name: bytes}` of every file, hidden state included."""
  return {str(path.relative_to(directory)): path.read_bytes()
          for path in sorted(directory.rglob("*")) if path.is_file()}


def test_records_have_the_original_layout_and_every_token(built, corpus,
                                                          bert_vocab_file):
  output_dir, info = built
  tokenizer = WordpieceTokenizer(bert_vocab_file, lower_case=True)
  records = _records(output_dir)
  assert len(records) == info.num_examples > 100
  features = tf.io.parse_example(
      records, pretraining_features.feature_spec(_SEQ))
  ids = features["input_ids"].numpy()
  mask = features["input_mask"].numpy()
  segments = features["segment_ids"].numpy()
  lengths = mask.sum(axis=1)
  for row, length in enumerate(lengths):
    assert mask[row].tolist() == [1] * length + [0] * (_SEQ - length)
    assert ids[row, 0] == tokenizer.cls_id and ids[row, length - 1] == tokenizer.sep_id
    separators = np.flatnonzero(ids[row, :length] == tokenizer.sep_id)
    assert len(separators) in (1, 2)
    assert (segments[row, :separators[0] + 1] == 0).all()
    assert (segments[row, separators[0] + 1:length] == 1).all()
    assert (ids[row, length:] == tokenizer.pad_id).all()
    assert (segments[row, length:] == 0).all()
  # Every corpus token is in a record unless truncation cut it.
  lines = [l.strip() for l in corpus.read_text().split("\n") if l.strip()]
  corpus_tokens = len(tokenizer.tokenize_to_numpy(lines)[0])
  written = int(lengths.sum()) - 2 * len(records) - int(
      (segments.max(axis=1) == 1).sum())
  assert info.num_tokens == corpus_tokens
  assert written == info.num_tokens - info.num_truncated_tokens
  assert info.num_documents == corpus.read_text().count("\n\n")


def test_dataset_info_describes_the_build(built, bert_vocab_file):
  output_dir, info = built
  on_disk = dataset_info_lib.read_dataset_info(str(output_dir))
  assert on_disk == info
  assert info.vocab_size == 30522 and info.max_seq_length == _SEQ
  assert info.lower_case and info.seed == 3 and info.num_shards == _NUM_SHARDS
  assert info.special_token_ids["[CLS]"] == 101
  shard_records = _shard_records(output_dir, info)
  assert info.shard_examples == [len(records) for records in shard_records]
  assert sum(info.shard_examples) == info.num_examples
  for name, size, checksum in zip(info.shard_files, info.shard_sizes,
                                  info.shard_sha256):
    data = (output_dir / name).read_bytes()
    assert (len(data), hashlib.sha256(data).hexdigest()) == (size, checksum)
  features = tf.io.parse_example(
      sum(shard_records, []), pretraining_features.feature_spec(_SEQ))
  assert dataset_info_lib.read_token_counts(
      str(output_dir), info.vocab_size) == unit_processor.count_tokens(
          features["input_ids"], features["input_mask"],
          info.vocab_size).tolist()
  assert not list(output_dir.glob("*.tmp"))
  assert not (output_dir / ".build_state").exists()


def test_shards_are_the_original_files_rotated(built, corpus, bert_vocab_file,
                                              tmp_path):
  """Example i of the corpus is in shard i % 5, as the original tool puts it;
  shard k starts at the k-th fifth of the corpus and wraps around; so every
  shard samples every part of the corpus."""
  output_dir, info = built
  files, _ = corpus_reader.inspect_corpus_files([str(corpus)])
  total_bytes = files[0].num_bytes
  processor = unit_processor.UnitProcessor(str(bert_vocab_file), True, _SEQ, 3)
  examples, offsets = [], []
  for unit in corpus_reader.iter_units(files,
                                       corpus_pass.unit_bytes(total_bytes)):
    records = processor(unit).records
    examples += records
    offsets += [unit.start] * len(records)
  # A build of one shard holds them in corpus order.
  single = build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(tmp_path), max_seq_length=_SEQ,
      num_shards=1, num_workers=0, seed=3)
  assert _shard_records(tmp_path, single) == [examples]
  shard_records = _shard_records(output_dir, info)
  assert shard_records == shard_layouts.rotated_files(
      examples, offsets, total_bytes, _NUM_SHARDS)
  original = shard_layouts.original_files(examples, _NUM_SHARDS)
  fifth = {}  # Of the corpus's bytes.
  for example, offset in zip(examples, offsets):
    fifth.setdefault(example, 5 * offset // total_bytes)
  for shard, records in enumerate(shard_records):
    assert sorted(records) == sorted(original[shard])
    assert {fifth[record] for record in records} == set(range(5))
    assert fifth[records[0]] == shard


def test_output_does_not_depend_on_workers(built, corpus, bert_vocab_file,
                                           tmp_path):
  build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(tmp_path), max_seq_length=_SEQ,
      num_shards=_NUM_SHARDS, num_workers=2, seed=3)
  assert _shard_bytes(tmp_path) == _shard_bytes(built[0])


def test_seed_changes_the_packing(built, corpus, bert_vocab_file, tmp_path):
  info = build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(tmp_path), max_seq_length=_SEQ,
      num_shards=_NUM_SHARDS, num_workers=0, seed=4)
  assert _shard_bytes(tmp_path) != _shard_bytes(built[0])
  assert info.num_tokens == built[1].num_tokens


def test_rerun_of_a_finished_build_changes_nothing_and_other_flags_fail(
    built, corpus, bert_vocab_file):
  output_dir, info = built
  before = _shard_bytes(output_dir)
  again = build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(output_dir),
      max_seq_length=_SEQ, num_shards=_NUM_SHARDS, num_workers=0, seed=3)
  assert again == info and _shard_bytes(output_dir) == before
  with pytest.raises(BuildError, match="other inputs or flags"):
    build_lib.build_pretraining_dataset(
        str(corpus), str(bert_vocab_file), str(output_dir),
        max_seq_length=_SEQ, num_shards=_NUM_SHARDS, num_workers=0, seed=5)


def test_a_dataset_of_contiguous_shards_is_checked_but_not_rebuilt(
    built, corpus, bert_vocab_file, tmp_path):
  """A dataset of an earlier version (its fingerprint without the shard
  layout): intact, a rerun accepts it; damaged, it says to rebuild it."""
  old = tmp_path / "old"
  shutil.copytree(built[0], old)
  info_path = old / dataset_info_lib.DATASET_INFO_FILENAME
  fields = json.loads(info_path.read_text())
  earlier_settings = {
      "format": 1, "vocab_sha256": fields["vocab_sha256"],
      "lower_case": True, "max_seq_length": _SEQ, "num_shards": _NUM_SHARDS,
      "seed": 3, "inputs": [[str(corpus), corpus.stat().st_size]]}
  fields["build_fingerprint"] = hashlib.sha256(
      json.dumps(earlier_settings, sort_keys=True).encode()).hexdigest()
  info_path.write_text(json.dumps(fields))
  rerun = lambda: build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(old), max_seq_length=_SEQ,
      num_shards=_NUM_SHARDS, num_workers=0, seed=3)
  assert rerun() == dataset_info_lib.read_dataset_info(str(old))
  (old / fields["shard_files"][1]).unlink()
  with pytest.raises(BuildError, match=(
      "is missing.*an earlier version of this tool.*rebuild the dataset in an "
      "empty --output_dir")):
    rerun()
  assert not (old / ".build_state").exists()


def test_every_spelling_of_the_inputs_names_one_build(
    built, corpus, bert_vocab_file, tmp_path):
  """The corpus reached through a linked folder, or by a relative path, is
  the same input: a rerun reuses the dataset. A dataset whose fingerprint
  an earlier version took of the paths as spelled is reused by a rerun that
  spells them the same way."""
  output_dir = tmp_path / "out"
  shutil.copytree(built[0], output_dir)
  linked = tmp_path / "linked"
  linked.symlink_to(corpus.parent, target_is_directory=True)
  before = _shard_bytes(output_dir)
  rerun = lambda corpus_path: build_lib.build_pretraining_dataset(
      corpus_path, str(bert_vocab_file), str(output_dir), max_seq_length=_SEQ,
      num_shards=_NUM_SHARDS, num_workers=0, seed=3)
  assert rerun(str(linked / corpus.name)) == built[1]
  assert rerun(os.path.relpath(corpus)) == built[1]
  # An earlier version's fingerprint of the linked spelling.
  info_path = output_dir / dataset_info_lib.DATASET_INFO_FILENAME
  fields = json.loads(info_path.read_text())
  spelled_settings = {
      "format": 1, "vocab_sha256": fields["vocab_sha256"],
      "lower_case": True, "max_seq_length": _SEQ, "num_shards": _NUM_SHARDS,
      "seed": 3, "inputs": [[str(linked / corpus.name),
                             corpus.stat().st_size]],
      "shard_layout": "rotated_round_robin"}
  fields["build_fingerprint"] = hashlib.sha256(
      json.dumps(spelled_settings, sort_keys=True).encode()).hexdigest()
  info_path.write_text(json.dumps(fields))
  assert rerun(str(linked / corpus.name)) == (
      dataset_info_lib.read_dataset_info(str(output_dir)))
  assert _shard_bytes(output_dir) == before
  with pytest.raises(BuildError, match="other inputs or flags"):
    build_lib.build_pretraining_dataset(
        str(linked / corpus.name), str(bert_vocab_file), str(output_dir),
        max_seq_length=_SEQ, num_shards=_NUM_SHARDS, num_workers=0, seed=5)


def test_formats_and_bad_input(tmp_path, bert_vocab_file):
  text = "The first document.\nIts second line.\n\nAnother document here.\n"
  inputs = tmp_path / "in"
  inputs.mkdir()
  (inputs / "a.txt").write_text(text)
  (inputs / "b.txt.gz").write_bytes(gzip.compress(text.encode()))
  (inputs / "c.txt.bz2").write_bytes(bz2.compress(text.encode()))
  (inputs / "d.jsonl").write_text(
      json.dumps({"text": "The first document.\nIts second line."}) + "\n" +
      "not json\n" + json.dumps({"title": "no text"}) + "\n")
  (inputs / "e.txt").write_bytes(b"Bad \xff\xfe bytes here.\n")
  (inputs / "f.txt").write_bytes(b"")
  (inputs / "g.txt").write_bytes(b"\x00\x01binary")
  output_dir = tmp_path / "out"
  info = build_lib.build_pretraining_dataset(
      str(inputs / "*"), str(bert_vocab_file), str(output_dir),
      max_seq_length=16, num_shards=2, num_workers=0)
  assert info.num_replaced_bytes == 2
  assert info.num_malformed_json_lines == 2
  assert sorted(os.path.basename(p) for p in info.skipped_files) == [
      "f.txt", "g.txt"]
  assert info.num_documents == 3 * 2 + 1 + 1
  tokens_per_copy = 8 + 4  # "the first document . its second line ." + 4.
  assert info.num_tokens == 3 * tokens_per_copy + 8 + 4
  assert len(_records(output_dir)) == info.num_examples == 8


def test_empty_corpus_and_missing_vocabulary_leave_nothing(tmp_path,
                                                           bert_vocab_file):
  (tmp_path / "empty.txt").write_text("\n\n")
  (tmp_path / "controls.txt").write_text("\x07\x08\n")
  output_dir = tmp_path / "out"
  with pytest.raises(BuildError, match="no text"):
    build_lib.build_pretraining_dataset(
        str(tmp_path / "empty.txt"), str(bert_vocab_file), str(output_dir))
  with pytest.raises(BuildError, match="holds no tokens"):
    build_lib.build_pretraining_dataset(
        str(tmp_path / "controls.txt"), str(bert_vocab_file), str(output_dir),
        num_workers=0)
  assert not [p for p in output_dir.iterdir()]
  with pytest.raises(VocabularyError, match="missing_vocab.txt"):
    build_lib.build_pretraining_dataset(
        str(tmp_path / "controls.txt"), str(tmp_path / "missing_vocab.txt"),
        str(output_dir))


class _Killed(BaseException):
  """Stands for SIGKILL at a chosen point: nothing after it runs."""


def _die_at(death, monkeypatch):
  """Makes the build die at `death`: in commit `commit_N` or the final
  commit once the records are in the `.tmp` files but before the state
  records them, or right after the first shard is renamed."""
  real_replace = os.replace
  commits = []

  def replace(source, destination):
    name = os.path.basename(destination)
    if name == "state.json":
      with open(source, encoding="utf-8") as state:
        final = json.load(state)["final"]
      commits.append(final)
      if death == ("final_commit" if final else f"commit_{len(commits)}"):
        raise _Killed
    real_replace(source, destination)
    if death == "first_rename" and name.startswith(shard_writer.SHARD_PREFIX):
      raise _Killed

  monkeypatch.setattr(shard_writer.os, "replace", replace)
  return commits


@pytest.mark.parametrize("death", ["commit_1", "commit_2", "final_commit",
                                   "first_rename"])
def test_a_build_killed_anywhere_resumes_to_the_same_bytes(
    death, built, corpus, bert_vocab_file, tmp_path, monkeypatch, capsys):
  output_dir = tmp_path / "killed"
  build = lambda: build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(output_dir), max_seq_length=_SEQ,
      num_shards=_NUM_SHARDS, num_workers=0, seed=3)
  commits = _die_at(death, monkeypatch)
  with pytest.raises(_Killed):
    build()
  monkeypatch.undo()
  assert len(commits) >= 2 or death != "commit_2"
  assert not (output_dir / dataset_info_lib.DATASET_INFO_FILENAME).exists()
  final_names = list(output_dir.glob("pretrain_data.tfrecord-*-of-00005"))
  assert len(final_names) == (1 if death == "first_rename" else 0)
  # The loader takes none of it, and says the build is unfinished (final
  # shard names or not).
  with pytest.raises(pretraining_dataloader.PretrainingDataError,
                     match="unfinished build.*rerun the same"):
    pretraining_dataloader.pretraining_dataset(str(output_dir), 4, _SEQ)
  capsys.readouterr()
  build()
  assert ("resuming after" in capsys.readouterr().err) == (
      death != "commit_1")
  assert _files(output_dir) == _files(built[0])


def _run_tool(corpus, vocab, output_dir, *extra):
  return subprocess.Popen(
      [sys.executable, "-m", "tfrecords_tools.build_pretraining_dataset",
       f"--input={corpus}", f"--vocab_file={vocab}",
       f"--output_dir={output_dir}", f"--max_seq_length={_SEQ}",
       "--num_shards=12", "--num_workers=0", "--seed=3", *extra],
      cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
      stderr=subprocess.PIPE, text=True,
      env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})


@pytest.mark.slow
def test_killed_run_resumes_to_the_same_shards(tmp_path, bert_vocab_file):
  corpus = tmp_path / "corpus.txt"
  sample_corpus.write_stdlib_corpus(str(corpus), 1_000_000)
  uninterrupted = tmp_path / "uninterrupted"
  build_lib.build_pretraining_dataset(
      str(corpus), str(bert_vocab_file), str(uninterrupted),
      max_seq_length=_SEQ, num_shards=12, num_workers=0, seed=3)
  killed = tmp_path / "killed"
  process = _run_tool(corpus, bert_vocab_file, killed)
  deadline = time.monotonic() + 120
  while not (killed / ".build_state" / "state.json").exists():
    assert process.poll() is None, process.stderr.read()
    assert time.monotonic() < deadline
    time.sleep(0.005)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert not list(killed.glob("pretrain_data.tfrecord-*-of-00012")), (
      "the kill came too late to test resuming")
  assert len(list(killed.glob("pretrain_data.tfrecord-*-of-00012.tmp"))) == 12
  assert not (killed / dataset_info_lib.DATASET_INFO_FILENAME).exists()
  rerun = _run_tool(corpus, bert_vocab_file, killed)
  _, stderr = rerun.communicate(timeout=300)
  assert rerun.returncode == 0, stderr
  assert "resuming after" in stderr
  assert _files(killed) == _files(uninterrupted)


def test_command_line_error_is_one_line(tmp_path, corpus):
  process = _run_tool(corpus, tmp_path / "nope.txt", tmp_path / "out")
  _, stderr = process.communicate(timeout=300)
  assert process.returncode == 1
  assert stderr.strip().splitlines()[-1].startswith("error: cannot read "
                                                    "vocabulary file")
  assert "Traceback" not in stderr
