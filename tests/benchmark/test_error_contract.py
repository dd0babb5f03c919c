"""The benchmark programs keep the command-line contract
(official_electra/command_line.py): a user error is exit status 1 and one
`error:` line on stderr, no traceback; `--verbose` shows the traceback.

Each mistake is caught before any model is built or corpus assembled, so each
run takes the seconds of its imports.
"""

import os
import subprocess
import sys

import pytest

from official_electra import command_line
from tests.training import tiny_pretraining

# The vocabulary benchmark with our learner made to disagree with
# tensorflow-text's: the check it exists for.
_VOCAB_LEARNER_DISAGREEING = (
    "from absl import app\n"
    "from official_electra.benchmark import vocab_learner\n"
    "vocab_learner.wordpiece_learner.learn = lambda *args, **kwargs: []\n"
    "app.run(vocab_learner.main)\n")

# (command, arguments of a mistake, text the error line names); `{tmp}` is
# the test's temporary folder, which holds `a_file` and `corpus.txt`.
_MISTAKES = [
    (["-m", "official_electra.benchmark.pretrain"],
     ["--implementations=ours,mine"],
     "--implementations: unknown implementation 'mine'; pass ours"),
    (["-m", "official_electra.benchmark.pretrain"],
     ["--implementations=ours", "--reference=huggingface"],
     "--reference=huggingface is not one of --implementations (ours)"),
    (["-m", "official_electra.benchmark.finetune"],
     ["--implementations=ours,mine"],
     "--implementations: unknown implementation 'mine'; pass ours"),
    (["-m", "official_electra.benchmark.preprocess"],
     ["--work_dir={tmp}/a_file/work", "--vocab_file={tmp}/a_file"],
     "cannot create --work_dir={tmp}/a_file/work (Not a directory)"),
    (["-c", _VOCAB_LEARNER_DISAGREEING],
     ["--corpus={tmp}/corpus.txt"],
     "the vocabularies differ, first at id 0"),
]


def _run(command, arguments, tmp_path, *extra):
  (tmp_path / "a_file").write_text("not a folder\n")
  (tmp_path / "corpus.txt").write_text("the cat sat on the mat\n" * 20)
  return subprocess.run(
      [sys.executable] + command
      + [argument.format(tmp=tmp_path) for argument in arguments]
      + list(extra),
      capture_output=True, text=True, check=False, timeout=300,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


@pytest.mark.slow
@pytest.mark.parametrize("command,arguments,named", _MISTAKES,
                         ids=["pretrain_implementations", "pretrain_reference",
                              "finetune_implementations", "preprocess_work_dir",
                              "vocab_learner_differs"])
def test_a_mistake_is_one_error_line_and_verbose_shows_the_traceback(
    tmp_path, command, arguments, named):
  named = named.format(tmp=tmp_path)
  result = _run(command, arguments, tmp_path)
  assert result.returncode == command_line.USER_ERROR_EXIT_STATUS, (
      result.stderr[-3000:])
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert named in errors[0], errors[0]

  verbose = _run(command, arguments, tmp_path, "--verbose")
  assert verbose.returncode not in (0, command_line.PREEMPTED_EXIT_STATUS)
  assert "Traceback (most recent call last)" in verbose.stderr, (
      verbose.stderr[-3000:])
  assert named in verbose.stderr
