"""Every study gin file under gin/experiments parses into study settings."""

import glob
import json
import os
import subprocess
import sys

from tests.training import tiny_pretraining

_READ = """
import json, sys
import gin
from official_electra import efficiency_study
result = {}
for path in json.loads(sys.argv[1]):
  gin.clear_config()
  efficiency_study._parse_gin([path], [])
  settings = efficiency_study.study_settings()
  result[path] = [settings.budget_flops, list(settings.checkpoint_fractions),
                  settings.num_seeds,
                  settings.finetuning.max_train_examples]
print(json.dumps(result))
"""


def _study_gin_files():
  paths = sorted(glob.glob(os.path.join(tiny_pretraining.REPO_ROOT, "gin",
                                        "experiments", "*.gin")))
  return [os.path.relpath(path, tiny_pretraining.REPO_ROOT) for path in paths
          if "efficiency_study." in open(path).read()]


def test_every_study_gin_file_parses_with_a_header():
  paths = _study_gin_files()
  assert "gin/experiments/study_full_sets.gin" in paths
  for path in paths:
    with open(os.path.join(tiny_pretraining.REPO_ROOT, path)) as gin_file:
      opening = gin_file.read(2000)
    assert opening.startswith("#") and "Command:" in opening, path
  completed = subprocess.run(
      [sys.executable, "-c", _READ, json.dumps(paths)], capture_output=True,
      text=True, check=False, cwd=tiny_pretraining.REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))
  assert completed.returncode == 0, completed.stderr[-2000:]
  settings = json.loads(completed.stdout.strip().splitlines()[-1])
  # The study at the pilot's settings: its encoders, every kept checkpoint,
  # 5 seeds, full training sets.
  assert settings["gin/experiments/study_full_sets.gin"] == [
      3.0e14, [0.2, 0.5, 1.0], 5, None]
