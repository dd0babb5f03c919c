"""Bad GLUE inputs to `python -m official_electra.finetune`, as subprocesses:
an unknown task, a malformed row and a label outside the task's set each end
with a non-zero exit, one `error: ...` line naming the file (and line) and the
fix, no traceback, and no results or checkpoint."""

import pytest

from official_electra import command_line
from tests.reliability import cli
from tests.reliability import finetune_setup

FINETUNE = "official_electra.finetune"
_WORDS = ("the", "movie", "is", "good", "bad", ".")
_SST_HEADER = "sentence\tlabel\n"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
  root = tmp_path_factory.mktemp("glue_inputs")
  finetune_setup.write_tiny_finetune_config(
      root, _WORDS, max_seq_length=8, batch_size=4, num_train_epochs=1)
  good_rows = "the movie is good .\t1\nthe movie is bad .\t0\n" * 4
  for name, extra_row in (("good", ""), ("malformed", "a row without a tab\n"),
                          ("bad_label", "the movie is good .\t2\n")):
    task_dir = root / name / "SST-2"
    task_dir.mkdir(parents=True)
    (task_dir / "train.tsv").write_text(_SST_HEADER + good_rows + extra_row)
    (task_dir / "dev.tsv").write_text(_SST_HEADER + good_rows)
    (task_dir / "test.tsv").write_text(
        "index\tsentence\n0\tthe movie is good .\n")
  return root


def _args(root, name, glue, task="SST-2"):
  return (FINETUNE, f"--task={task}", f"--glue_dir={root / glue}",
          f"--vocab_file={root / 'vocab.txt'}",
          f"--gin_file={root / 'tiny.gin'}",
          f"--model_dir={root / ('run_' + name)}")


@pytest.fixture(scope="module")
def runs(root):
  return cli.run_all({
      "unknown_task": _args(root, "unknown_task", "good", task="SST3"),
      "malformed_row": _args(root, "malformed_row", "malformed"),
      "bad_label": _args(root, "bad_label", "bad_label"),
  })


def _no_results(model_dir):
  assert not list(model_dir.rglob("eval_results.json"))
  assert not list(model_dir.rglob("*.index"))
  assert not (model_dir / "submission").exists()


@pytest.mark.slow
def test_unknown_glue_task(runs, root):
  completed = runs["unknown_task"].result()
  assert completed.returncode == command_line.USER_ERROR_EXIT_STATUS
  cli.assert_error(completed,
                   "error: unknown GLUE task 'SST3'; valid tasks: CoLA, SST-2")
  assert not (root / "run_unknown_task").exists()


@pytest.mark.slow
def test_malformed_glue_row(runs, root):
  cli.assert_error(runs["malformed_row"].result(),
                   f"{root / 'malformed' / 'SST-2' / 'train.tsv'}:10:",
                   "expected 2 tab-separated columns, found 1",
                   "re-download it")
  _no_results(root / "run_malformed_row")


@pytest.mark.slow
def test_label_outside_the_task_set(runs, root):
  cli.assert_error(runs["bad_label"].result(),
                   f"{root / 'bad_label' / 'SST-2' / 'train.tsv'}:10:",
                   "label '2' is not one of 0, 1",
                   "check that the file belongs to this task")
  _no_results(root / "run_bad_label")
