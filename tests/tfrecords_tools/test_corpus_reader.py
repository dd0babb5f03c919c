"""Tests of corpus_reader: formats, skipped files, document-aligned units."""

import bz2
import gzip
import json

import pytest

from tfrecords_tools import corpus_reader
from tfrecords_tools import unit_processor
from tfrecords_tools.errors import BuildError


def _text(num_documents):
  return "".join(f"document {d} line {l}.\n" * 1 + ("\n" if l == 2 else "")
                 for d in range(num_documents) for l in range(3)).encode()


def test_units_cover_each_file_and_end_at_blank_lines(tmp_path):
  data = _text(400)
  (tmp_path / "a.txt").write_bytes(data)
  (tmp_path / "b.jsonl.gz").write_bytes(gzip.compress(b'{"text": "x"}\n' * 900))
  files, skipped = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(str(tmp_path / "*")))
  assert not skipped
  assert [f.kind for f in files] == ["text", "jsonl"]
  assert files[1].num_bytes == 14 * 900
  units = list(corpus_reader.iter_units(files, unit_bytes=1000))
  text_units = [u for u in units if u.kind == "text"]
  assert b"".join(u.data for u in text_units) == data
  assert len(text_units) > 5
  assert all(u.data.endswith(b"\n\n") for u in text_units)
  assert [u.index for u in units] == list(range(len(units)))
  starts = [u.start for u in units]
  assert starts == sorted(starts) and starts[0] == 0
  assert units[-1].start + len(units[-1].data) == sum(f.num_bytes for f in files)
  assert all(u.data.endswith(b"}\n") for u in units if u.kind == "jsonl")


def test_document_longer_than_four_units_is_cut_at_a_line_end(tmp_path):
  data = b"a line of a very long document\n" * 500
  (tmp_path / "long.txt.bz2").write_bytes(bz2.compress(data))
  files, _ = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(str(tmp_path / "long.txt.bz2")))
  units = list(corpus_reader.iter_units(files, unit_bytes=1000))
  assert b"".join(u.data for u in units) == data
  assert all(u.data.endswith(b"\n") for u in units)
  assert max(len(u.data) for u in units) < 4 * 1000 + 100


def test_json_lines_document_longer_than_four_units_stays_whole(tmp_path):
  # Cutting a JSON line would make both halves malformed (and dropped).
  long_text = " ".join(f"word{i}" for i in range(3000))  # ~26 kB on one line
  data = (b'{"text": "short one"}\n' + json.dumps({"text": long_text}).encode()
          + b"\n" + b'{"text": "after it"}\n')
  (tmp_path / "docs.jsonl").write_bytes(data)
  files, _ = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(str(tmp_path / "docs.jsonl")))
  units = list(corpus_reader.iter_units(files, unit_bytes=1000))
  assert b"".join(u.data for u in units) == data
  assert all(u.data.endswith(b"\n") for u in units)
  documents = []
  for unit in units:
    sentences, _, _, malformed = unit_processor.read_sentences(unit)
    assert malformed == 0
    documents += sentences
  assert documents == ["short one", long_text, "after it"]


def test_empty_and_binary_files_are_skipped(tmp_path):
  (tmp_path / "empty.txt").write_bytes(b"\n \n")
  (tmp_path / "binary.txt").write_bytes(b"\x7fELF\x00\x00\x01")
  (tmp_path / "ok.txt").write_bytes(b"text\n")
  files, skipped = corpus_reader.inspect_corpus_files(
      corpus_reader.find_corpus_files(str(tmp_path / "*.txt")))
  assert [f.path.rsplit("/", 1)[1] for f in files] == ["ok.txt"]
  assert {p.rsplit("/", 1)[1]: r for p, r in skipped.items()} == {
      "empty.txt": "empty", "binary.txt": "binary (NUL bytes)"}


def test_missing_and_corrupt_files_are_named(tmp_path):
  with pytest.raises(BuildError, match="matches no file"):
    corpus_reader.find_corpus_files(str(tmp_path / "nothing*.txt"))
  (tmp_path / "bad.txt.gz").write_bytes(b"not gzip at all")
  with pytest.raises(BuildError, match=r"bad\.txt\.gz"):
    corpus_reader.inspect_corpus_files([str(tmp_path / "bad.txt.gz")])
