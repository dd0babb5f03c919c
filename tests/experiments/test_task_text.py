"""Task-adaptive pretraining text: the tasks' training sentences, no labels."""

import pytest

from official_electra.data import glue
from official_electra.experiments import task_text


@pytest.fixture
def glue_dir(tmp_path):
  sst = tmp_path / "SST-2"
  sst.mkdir()
  (sst / "train.tsv").write_text(
      "sentence\tlabel\n" + "".join(f"train sentence {i}\t{i % 2}\n"
                                    for i in range(5)))
  (sst / "dev.tsv").write_text("sentence\tlabel\ndev sentence\t1\n")
  (sst / "test.tsv").write_text("index\tsentence\n0\ttest sentence\n")
  sts = tmp_path / "STS-B"
  sts.mkdir()
  header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
            "sentence1\tsentence2\tscore\n")
  (sts / "train.tsv").write_text(header + "".join(
      f"{i}\tg\tf\ty\t{i}\ts\ts\tfirst  of pair {i}\tsecond of pair {i}\t"
      f"{i}.0\n" for i in range(3)))
  (sts / "dev.tsv").write_text(header + "0\tg\tf\ty\t0\ts\ts\tdev a\tdev b\t1.0\n")
  return tmp_path


def _documents(path):
  return [block.splitlines() for block in path.read_text().split("\n\n")
          if block.strip()]


def test_only_training_text_without_labels_in_documents(glue_dir, tmp_path):
  path = tmp_path / "task_text.txt"
  written = task_text.write_task_text(str(path), str(glue_dir),
                                      ["SST-2", "STS-B"], copies=1,
                                      examples_per_document=3)
  text = path.read_text()
  assert written == {"examples": 8, "copies": 1, "lines": 5 + 2 * 3}
  assert "dev" not in text and "test" not in text
  lines = [line for line in text.splitlines() if line]
  assert sorted(lines) == sorted(
      [f"train sentence {i}" for i in range(5)] +
      [f"first of pair {i}" for i in range(3)] +
      [f"second of pair {i}" for i in range(3)])
  # No label column survives (runs of spaces are one space); 8 examples in
  # documents of at most 3 (a pair is two lines).
  assert all("\t" not in line for line in lines)
  documents = _documents(path)
  assert len(documents) == 3
  assert all(len(document) <= 6 for document in documents)
  # A pair's sentences stay together, first then second.
  for i in range(3):
    document = next(d for d in documents if f"first of pair {i}" in d)
    at = document.index(f"first of pair {i}")
    assert document[at + 1] == f"second of pair {i}"


def test_copies_are_reshuffled_and_the_file_is_reproducible(glue_dir, tmp_path):
  path = tmp_path / "copies.txt"
  task_text.write_task_text(str(path), str(glue_dir), ["SST-2"], copies=4,
                            examples_per_document=5)
  documents = _documents(path)
  assert len(documents) == 4
  assert all(sorted(document) == sorted(documents[0])
             for document in documents)
  assert len({tuple(document) for document in documents}) > 1
  again = tmp_path / "again.txt"
  task_text.write_task_text(str(again), str(glue_dir), ["SST-2"], copies=4,
                            examples_per_document=5)
  assert again.read_bytes() == path.read_bytes()


@pytest.mark.parametrize("copies, per_document", [(0, 16), (1, 0)])
def test_counts_below_one_are_refused(glue_dir, tmp_path, copies,
                                      per_document):
  with pytest.raises(ValueError, match="at least 1"):
    task_text.write_task_text(str(tmp_path / "x.txt"), str(glue_dir),
                              ["SST-2"], copies, per_document)


def test_a_task_without_a_training_file_is_a_glue_error(glue_dir, tmp_path):
  with pytest.raises(glue.GlueDataError):
    task_text.write_task_text(str(tmp_path / "x.txt"), str(glue_dir),
                              ["CoLA"], copies=1)
  assert not (tmp_path / "x.txt").exists()
