"""Readers for the nine GLUE tasks, in the TSV layouts the GLUE download script writes.

Each task's files live in `<glue_dir>/<TASK>/`: `train.tsv`, `dev.tsv`, `test.tsv`
(MNLI: `dev_matched.tsv`, `dev_mismatched.tsv`, `test_matched.tsv`,
`test_mismatched.tsv`). Train and dev rows carry a label; test rows carry an index
and no label. Rows are split on tabs only, with no quoting (the files contain
unbalanced `"` characters), and a row whose column count or label is wrong raises
`GlueDataError` naming the file and line. The layouts follow Section 4 of
ELECTRA_REFERENCE.md and the original's `finetune/classification/classification_tasks.py`.
"""

import dataclasses
import io
import os
from typing import Optional, Sequence, Union

from official_electra import errors
from official_electra import files

GLUE_TASK_NAMES = ("CoLA", "SST-2", "MRPC", "STS-B", "QQP", "MNLI", "QNLI",
                   "RTE", "WNLI")

# A UTF-8 byte-order mark, which some GLUE files start with (MRPC's do). A
# header line is skipped whole; a headerless file's first row (CoLA's) is
# stripped of it before it is parsed.
_BYTE_ORDER_MARK = "\ufeff"


class GlueDataError(errors.UserError):
  """A GLUE file is missing or one of its rows does not fit the task's layout."""


@dataclasses.dataclass(frozen=True)
class GlueExample:
  """One sentence or sentence pair of a GLUE split.

  Attributes:
    example_id: the row's index column for test rows (what a submission file must
      repeat); `<split>-<line>` for train and dev rows.
    text_a: the first (or only) sentence.
    text_b: the second sentence of a pair task, else None.
    label: the label string for classification tasks (one of the task's labels),
      a float for STS-B, None for test rows.
  """
  example_id: str
  text_a: str
  text_b: Optional[str]
  label: Union[str, float, None]


@dataclasses.dataclass(frozen=True)
class SplitLayout:
  """Where the fields of one kind of file sit.

  Attributes:
    has_header: whether the first line is a header to skip.
    column_counts: the allowed numbers of tab-separated columns per row.
    text_a_column: column of the first sentence.
    text_b_column: column of the second sentence, None for single-sentence tasks.
    label_column: column of the label (negative counts from the end), None for
      unlabelled (test) files.
    index_column: column of the row index, None when the file has none.
  """
  has_header: bool
  column_counts: Sequence[int]
  text_a_column: int
  text_b_column: Optional[int]
  label_column: Optional[int] = None
  index_column: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class TaskLayout:
  """The files of one GLUE task.

  Attributes:
    labels: the label strings, in the order of the model's output units; None for
      the regression task STS-B.
    labelled: layout of train and dev files.
    test: layout of test files.
    dev_splits: names of the dev files (without `.tsv`).
    test_splits: names of the test files (without `.tsv`).
  """
  labels: Optional[Sequence[str]]
  labelled: SplitLayout
  test: SplitLayout
  dev_splits: Sequence[str] = ("dev",)
  test_splits: Sequence[str] = ("test",)


def _pair_test_layout(num_columns, text_a_column):
  return SplitLayout(has_header=True, column_counts=(num_columns,),
                     text_a_column=text_a_column,
                     text_b_column=text_a_column + 1, index_column=0)


_BINARY = ("0", "1")
_ENTAILMENT = ("entailment", "not_entailment")

GLUE_LAYOUTS = {
    # source, label, acceptability mark, sentence; no header.
    "CoLA": TaskLayout(
        labels=_BINARY,
        labelled=SplitLayout(False, (4,), 3, None, label_column=1),
        test=SplitLayout(True, (2,), 1, None, index_column=0)),
    # sentence, label.
    "SST-2": TaskLayout(
        labels=_BINARY,
        labelled=SplitLayout(True, (2,), 0, None, label_column=1),
        test=SplitLayout(True, (2,), 1, None, index_column=0)),
    # Quality, #1 ID, #2 ID, #1 String, #2 String.
    "MRPC": TaskLayout(
        labels=_BINARY,
        labelled=SplitLayout(True, (5,), 3, 4, label_column=0),
        test=_pair_test_layout(5, 3)),
    # index, genre, filename, year, old_index, source1, source2, sentence1,
    # sentence2, score.
    "STS-B": TaskLayout(
        labels=None,
        labelled=SplitLayout(True, (10,), 7, 8, label_column=9),
        test=_pair_test_layout(9, 7)),
    # id, qid1, qid2, question1, question2, is_duplicate; test: id, q1, q2.
    "QQP": TaskLayout(
        labels=_BINARY,
        labelled=SplitLayout(True, (6,), 3, 4, label_column=5),
        test=_pair_test_layout(3, 1)),
    # index, promptID, pairID, genre, 4 parses, sentence1, sentence2, then
    # label1 and gold_label (train) or label1..label5 and gold_label (dev).
    "MNLI": TaskLayout(
        labels=("contradiction", "entailment", "neutral"),
        labelled=SplitLayout(True, (12, 16), 8, 9, label_column=-1),
        test=_pair_test_layout(10, 8),
        dev_splits=("dev_matched", "dev_mismatched"),
        test_splits=("test_matched", "test_mismatched")),
    # index, question, sentence, label.
    "QNLI": TaskLayout(
        labels=_ENTAILMENT,
        labelled=SplitLayout(True, (4,), 1, 2, label_column=3),
        test=_pair_test_layout(3, 1)),
    # index, sentence1, sentence2, label.
    "RTE": TaskLayout(
        labels=_ENTAILMENT,
        labelled=SplitLayout(True, (4,), 1, 2, label_column=3),
        test=_pair_test_layout(3, 1)),
    "WNLI": TaskLayout(
        labels=_BINARY,
        labelled=SplitLayout(True, (4,), 1, 2, label_column=3),
        test=_pair_test_layout(3, 1)),
}


def get_task_layout(task_name: str) -> TaskLayout:
  """Returns the layout of `task_name`; raises GlueDataError for unknown names."""
  if task_name not in GLUE_LAYOUTS:
    raise GlueDataError(f"unknown GLUE task {task_name!r}; valid tasks: "
                        f"{', '.join(GLUE_TASK_NAMES)}")
  return GLUE_LAYOUTS[task_name]


def split_path(glue_dir: str, task_name: str, split: str) -> str:
  """Returns `<glue_dir>/<task_name>/<split>.tsv`."""
  return os.path.join(glue_dir, task_name, f"{split}.tsv")


def _is_test_split(task_layout: TaskLayout, split: str) -> bool:
  if split in task_layout.test_splits:
    return True
  if split == "train" or split in task_layout.dev_splits:
    return False
  valid = ["train", *task_layout.dev_splits, *task_layout.test_splits]
  raise GlueDataError(f"unknown split {split!r}; valid splits: {', '.join(valid)}")


def _parse_label(raw_label, labels, path, line_number):
  """Checks a label string against the task's labels (None: a float score)."""
  if labels is None:
    try:
      return float(raw_label)
    except ValueError:
      raise GlueDataError(
          f"{path}:{line_number}: score {raw_label!r} is not a number; "
          "check that the file is the GLUE STS-B layout") from None
  if raw_label not in labels:
    raise GlueDataError(
        f"{path}:{line_number}: label {raw_label!r} is not one of "
        f"{', '.join(labels)}; check that the file belongs to this task")
  return raw_label


def _parse_row(columns, layout, labels, split, path, line_number):
  """Turns one row's columns into a GlueExample."""
  if len(columns) not in layout.column_counts:
    expected = " or ".join(str(count) for count in layout.column_counts)
    raise GlueDataError(
        f"{path}:{line_number}: expected {expected} tab-separated columns, found "
        f"{len(columns)}; the file does not have this task's GLUE layout "
        "(re-download it with the GLUE download script)")
  if layout.label_column is None:
    example_id = columns[layout.index_column]
    label = None
  else:
    example_id = f"{split}-{line_number}"
    label = _parse_label(columns[layout.label_column].strip(), labels, path,
                         line_number)
  text_b = None if layout.text_b_column is None else columns[layout.text_b_column]
  return GlueExample(example_id=example_id, text_a=columns[layout.text_a_column],
                     text_b=text_b, label=label)


def read_tsv_file(path: str, task_name: str, split: str) -> list[GlueExample]:
  """Reads one GLUE TSV file written in `task_name`'s layout.

  Args:
    path: the TSV file.
    task_name: one of GLUE_TASK_NAMES; selects the column layout.
    split: `train`, one of the task's dev splits, or one of its test splits
      (test splits are read without labels).

  Returns:
    The file's examples in file order.

  Raises:
    GlueDataError: unknown task or split, missing file, text that is not
      UTF-8, or a malformed row.
  """
  task_layout = get_task_layout(task_name)
  is_test = _is_test_split(task_layout, split)
  layout = task_layout.test if is_test else task_layout.labelled
  if not files.isfile(path):
    raise GlueDataError(f"{path}: no such file; pass --glue_dir pointing at the "
                        "folder the GLUE download script wrote")
  examples = []
  try:
    # Lines end at \n, \r\n or \r, as Python's reader with newline="".
    with io.StringIO(files.read_bytes(path).decode("utf-8"),
                     newline="") as tsv_file:
      for line_number, line in enumerate(tsv_file, start=1):
        if line_number == 1 and layout.has_header:
          continue
        line = line.rstrip("\r\n")
        if line_number == 1:
          line = line.lstrip(_BYTE_ORDER_MARK)
        if not line:
          continue
        examples.append(_parse_row(line.split("\t"), layout,
                                   task_layout.labels, split, path,
                                   line_number))
  except UnicodeDecodeError as error:
    raise GlueDataError(
        f"{path}: not UTF-8 text ({error.reason}); re-download it or convert "
        "it to UTF-8") from None
  return examples


def read_split(glue_dir: str, task_name: str, split: str) -> list[GlueExample]:
  """Reads `<glue_dir>/<task_name>/<split>.tsv`; see `read_tsv_file`."""
  return read_tsv_file(split_path(glue_dir, task_name, split), task_name, split)
