"""A normal run's output holds the program's own lines, not TensorFlow's
chatter (C++ INFO/WARNING/ERROR at import and start, CUDA probing, XLA, the
`tensorflow` logger's deprecations, checkpoint sharding and partial-restore
warnings); `--verbose` shows it again. Pretraining and fine-tuning from a
pretraining model_dir, run as users run them, without TF_CPP_MIN_LOG_LEVEL in
the environment."""

import os
import pathlib
import subprocess
import sys

import pytest

from tests.training import tiny_pretraining
from tests.training.tiny_pretraining import SEQ_LENGTH

_REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
# Lines seen in runs before the programs were quieted (docs/training.md).
_CHATTER = (
    "cpu_feature_guard", "oneDNN custom operations", "cudart_stub",
    "cuInit", "absl::InitializeLog", "Compiled cluster using XLA",
    "Sharding callback duration", "is deprecated", "WARNING:tensorflow",
    "INFO:tensorflow", "Value in checkpoint could not be found",
    "not in all_model_checkpoint_paths", "GeneratorDatasetOp")


def _run(*args):
  environment = {name: value for name, value in os.environ.items()
                 if name != "TF_CPP_MIN_LOG_LEVEL"}
  environment["CUDA_VISIBLE_DEVICES"] = ""
  completed = subprocess.run([sys.executable, "-m", *map(str, args)],
                             cwd=_REPO_ROOT, capture_output=True, text=True,
                             env=environment, timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  return completed.stdout + completed.stderr


def _chatter(output):
  return [line for line in output.splitlines()
          if any(pattern in line for pattern in _CHATTER)]


@pytest.fixture(scope="module")
def pretraining(tmp_path_factory):
  root = tmp_path_factory.mktemp("quiet_logs")
  return root, tiny_pretraining.build_data(root)


def _train(root, data, model_dir, steps, *extra):
  data_dir, vocab_file, vocab_size = data
  return _run("official_electra.train", "--gin_file=gin/tiny.gin",
              f"--gin_bindings=encoder.vocab_size={vocab_size}",
              f"--gin_bindings=run_pretraining.max_seq_length={SEQ_LENGTH}",
              f"--gin_bindings=run_pretraining.num_train_steps={steps}",
              "--gin_bindings=run_pretraining.save_checkpoints_steps=2",
              f"--train_data={data_dir}", f"--vocab_file={vocab_file}",
              f"--model_dir={root / model_dir}", "--noprogress_bar", *extra)


@pytest.fixture(scope="module")
def quiet_runs(pretraining):
  """A run to step 4, then resumed to step 6, without --verbose."""
  root, data = pretraining
  return _train(root, data, "run", 4), _train(root, data, "run", 6)


@pytest.mark.slow
def test_pretraining_is_quiet_and_verbose_shows_the_chatter(pretraining,
                                                            quiet_runs):
  root, data = pretraining
  quiet, resumed = quiet_runs
  assert _chatter(quiet) == [], quiet[-3000:]
  assert "stopped at step 4" in quiet
  # A resumed run (restore, state-file edits) is quiet too.
  assert _chatter(resumed) == [], resumed[-3000:]
  assert "stopped at step 6" in resumed
  # The same run resumed with --verbose shows what the quiet ones hide.
  verbose = _train(root, data, "run", 8, "--verbose")
  assert len(_chatter(verbose)) >= 3, verbose[-3000:]


@pytest.mark.slow
def test_fine_tuning_from_a_pretraining_model_dir_is_quiet(
    pretraining, quiet_runs, tiny_glue_dir):
  del quiet_runs  # The pretraining model_dir `run` it leaves (step 6 or 8).
  root, _ = pretraining
  arguments = ("official_electra.finetune", "--task=SST-2",
               f"--glue_dir={tiny_glue_dir}",
               f"--init_checkpoint={root / 'run'}",
               "--gin_file=gin/glue/small.gin",
               "--gin_bindings=glue_hyperparameters.max_seq_length=16",
               "--gin_bindings=glue_hyperparameters.num_train_epochs=1")
  quiet = _run(*arguments, f"--model_dir={root / 'glue'}")
  assert "SST-2: accuracy=" in quiet
  assert _chatter(quiet) == [], quiet[-3000:]
  verbose = _run(*arguments, f"--model_dir={root / 'glue_verbose'}",
                 "--verbose")
  assert _chatter(verbose), verbose[-3000:]
