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
                  settings.finetuning.max_train_examples,
                  settings.flops_count]
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
      3.0e14, [0.2, 0.5, 1.0], 5, None, "matmul"]
  # Every study record under docs/experiments/ was planned on the matmul
  # count: the files that reproduce them bind it (the default is the
  # paper's count).
  counts = {path: values[-1] for path, values in settings.items()}
  assert counts == dict.fromkeys(paths, "matmul")


_READ_RANDOM_INIT_RECIPE = """
import json, sys
import gin
from official_electra import efficiency_study
result = {}
for path in json.loads(sys.argv[1]):
  gin.clear_config()
  efficiency_study._parse_gin([path], [])
  settings = efficiency_study.study_settings()
  result[path] = settings.finetuning_of('random_init').layerwise_decay_rate
gin.clear_config()
efficiency_study._parse_gin(
    [json.loads(sys.argv[1])[0]],
    ['efficiency_study.random_init_own_recipe = True'])
settings = efficiency_study.study_settings()
result['own recipe'] = [settings.finetuning_of('random_init').layerwise_decay_rate,
                        settings.finetuning_of('random_init').learning_rate,
                        settings.finetuning.learning_rate,
                        settings.finetuning_of('electra').layerwise_decay_rate]
gin.clear_config()
gin.bind_parameter('efficiency_study.pretraining', {})
gin.bind_parameter('efficiency_study.budget_flops', 1e12)
result['default'] = efficiency_study.study_settings().random_init_own_recipe
print(json.dumps(result))
"""


def test_recorded_studies_fine_tune_random_init_as_they_did():
  # Every study record under docs/experiments/ fine-tuned random init with
  # the pretrained encoders' layer-wise decay (0.8): the files that made
  # them keep it. A study that does not bind it gets random init's own
  # recipe: no decay, the same learning rate.
  paths = _study_gin_files()
  completed = subprocess.run(
      [sys.executable, "-c", _READ_RANDOM_INIT_RECIPE, json.dumps(paths)],
      capture_output=True, text=True, check=False,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))
  assert completed.returncode == 0, completed.stderr[-2000:]
  decay = json.loads(completed.stdout.strip().splitlines()[-1])
  assert decay.pop("default") is True
  assert decay.pop("own recipe") == [1.0, 3e-4, 3e-4, 0.8]
  assert decay == dict.fromkeys(paths, 0.8)
