"""The command-line contract every `python -m` program keeps
(official_electra/command_line.py): a user error is exit status 1 and one
`error:` line on stderr, no traceback; `--verbose` shows the traceback."""

import os
import subprocess
import sys

import pytest

from official_electra import command_line
from tests.training import tiny_pretraining

# (program, arguments of a mistake it must report, text the error names);
# `{tmp}` is the test's temporary folder.
_MISTAKES = [
    ("official_electra.train", ["--gin_file=gin/no_such.gin"],
     "gin/no_such.gin: no such gin file"),
    ("official_electra.finetune",
     ["--task=SST-2", "--glue_dir={tmp}", "--model_dir={tmp}/out",
      "--gin_file=gin/glue/no_such.gin"], "gin/glue/no_such.gin"),
    ("official_electra.efficiency_study", ["--output_dir={tmp}/study"],
     "no corpus, glue_dir"),
    ("official_electra.export", ["--export_dir={tmp}/export"],
     "nothing to export"),
    ("official_electra.export",
     ["--model_dir={tmp}", "--finetuned_dir={tmp}", "--export_dir={tmp}/e"],
     "pass one of --finetuned_dir (a fine-tuned model) or --model_dir"),
    ("official_electra.export",
     ["--model_dir={tmp}/no_such_run", "--export_dir={tmp}/export"],
     "no_such_run"),
    ("official_electra.export",
     ["--finetuned_dir={tmp}", "--tower=generator", "--export_dir={tmp}/e"],
     "--tower picks a pretrained tower: pass it with --model_dir"),
    ("official_electra.convert",
     ["--hf_dir={tmp}/no_such_hf", "--output_dir={tmp}/converted"],
     "no_such_hf/config.json: no such file; pass a Hugging Face model "
     "directory"),
    ("official_electra.finetune",
     ["--task=SQuAD-1.1", "--model_dir={tmp}/out",
      "--train_file={tmp}/no_such_train.json", "--predict_file={tmp}/x.json"],
     "no_such_train.json: no such file"),
    ("official_electra.squad_eval", ["{tmp}/no_such_data.json", "{tmp}/p.json"],
     "no_such_data.json"),
    ("official_electra.quickstart", ["--work_dir={tmp}/a_file"], "a_file"),
    ("official_electra.experiments.size_report",
     ["--studies={tmp}/no_such_study", "--output_dir={tmp}/report"],
     "no_such_study/results.json: no such file"),
    ("official_electra.experiments.masking_stats",
     ["--train_data={tmp}/no_such_data", "--vocab_file={tmp}/a_file"],
     "a_file"),
    ("official_electra.benchmark.input_pipeline",
     ["--file_pattern={tmp}/no_such_data"], "no_such_data"),
    ("official_electra.benchmark.accumulation_memory",
     ["--batch_size=10", "--accumulation_steps=4"],
     "--batch_size=10 does not split into --accumulation_steps=4"),
    ("official_electra.benchmark.serving",
     ["--vocab_file={tmp}/no_such_vocab.txt"], "no_such_vocab.txt: no such"),
    ("official_electra.benchmark.preprocess",
     ["--work_dir={tmp}/pre", "--corpus_mb=1",
      "--vocab_file={tmp}/no_such_vocab.txt"], "no_such_vocab.txt"),
    ("official_electra.benchmark.vocab_learner",
     ["--corpus={tmp}/no_such.txt"], "no_such.txt"),
    ("official_electra.benchmark.pretrain", ["--implementations=ours,mine"],
     "--implementations: unknown implementation 'mine'; pass ours"),
    ("official_electra.benchmark.pretrain",
     ["--implementations=ours", "--reference=huggingface"],
     "--reference=huggingface is not one of --implementations (ours)"),
    ("official_electra.benchmark.finetune", ["--implementations=ours,mine"],
     "--implementations: unknown implementation 'mine'; pass ours"),
    ("official_electra.benchmark.preprocess",
     ["--work_dir={tmp}/a_file/work", "--vocab_file={tmp}/a_file"],
     "cannot create --work_dir={tmp}/a_file/work (Not a directory)"),
    # The vocabulary benchmark with our learner made to disagree with
    # tensorflow-text's: the check it exists for.
    (["-c", "from absl import app\n"
      "from official_electra.benchmark import vocab_learner\n"
      "vocab_learner.wordpiece_learner.learn = lambda *args, **kwargs: []\n"
      "app.run(vocab_learner.main)\n"],
     ["--corpus={tmp}/corpus.txt"], "the vocabularies differ, first at id 0"),
    ("tfrecords_tools.build_vocab",
     ["--input={tmp}/no_such.txt", "--output={tmp}/vocab.txt"], "no_such.txt"),
    ("tfrecords_tools.build_pretraining_dataset",
     ["--input={tmp}/a_file", "--vocab_file={tmp}/no_such_vocab.txt",
      "--output_dir={tmp}/data"], "no_such_vocab.txt"),
]


def _run(program, arguments, tmp_path, *extra):
  """Runs `python -m program` (or `python *program` for a list)."""
  (tmp_path / "a_file").write_text("not a folder\n")
  (tmp_path / "corpus.txt").write_text("the cat sat on the mat\n" * 20)
  command = [sys.executable] + (
      program if isinstance(program, list) else ["-m", program]) + [
      argument.format(tmp=tmp_path) for argument in arguments] + list(extra)
  return subprocess.run(command, capture_output=True, text=True, check=False,
                        timeout=300, cwd=tiny_pretraining.REPO_ROOT,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


@pytest.mark.slow
@pytest.mark.parametrize(
    "program,arguments,named", _MISTAKES,
    ids=[f"{m[0] if isinstance(m[0], str) else 'python -c'}:{m[2]}"
         for m in _MISTAKES])
def test_a_mistake_is_one_error_line_and_verbose_shows_the_traceback(
    tmp_path, program, arguments, named):
  named = named.format(tmp=tmp_path)
  result = _run(program, arguments, tmp_path)
  assert result.returncode == command_line.USER_ERROR_EXIT_STATUS, (
      result.stderr[-3000:])
  assert "Traceback" not in result.stderr, result.stderr[-3000:]
  errors = [line for line in result.stderr.splitlines()
            if line.startswith("error:")]
  assert len(errors) == 1, result.stderr[-3000:]
  assert named in errors[0], errors[0]

  verbose = _run(program, arguments, tmp_path, "--verbose")
  assert verbose.returncode not in (0, command_line.PREEMPTED_EXIT_STATUS)
  assert "Traceback (most recent call last)" in verbose.stderr, (
      verbose.stderr[-3000:])
  assert named in verbose.stderr


def test_user_message_drops_gins_call_context_and_keeps_detail_lines():
  error = ValueError("bad value for x; fix it\n  missing 2: a, b\n"
                     "  In call to configurable 'run' (<function run>)")
  assert command_line.user_message(error) == (
      "bad value for x; fix it\n  missing 2: a, b")
  assert command_line.user_message(ValueError(" plain ")) == "plain"
