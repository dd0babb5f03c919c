"""Every pretraining gin file parses and holds the paper's settings."""

import json
import os
import subprocess
import sys

from tests.training import tiny_pretraining

# name -> (hidden, layers, generator fraction, mask_prob, lr, batch, steps, seq)
_PAPER = {
    "gin/small.gin": (256, 12, 0.25, 0.15, 5e-4, 128, 1_000_000, 128),
    "gin/base.gin": (768, 12, 1 / 3, 0.15, 2e-4, 256, 766_000, 512),
    "gin/large.gin": (1024, 24, 0.25, 0.25, 2e-4, 2048, 400_000, 512),
    "gin/small_plus_plus.gin": (256, 12, 1.0, 0.15, 5e-4, 128, 4_000_000, 512),
    "gin/tiny.gin": (64, 2, 0.5, 0.15, 2e-3, 16, 300, 64),
}
_EXPERIMENTS = ("mlm_baseline", "electra_15", "replace_mlm", "all_tokens_mlm",
                "uniform_generator", "unigram_generator", "two_stage",
                "adversarial", "span_masking_electra", "span_masking_mlm")

_READ_CONFIGS = """
import json, sys
import gin
from official_electra import train
result = {}
def bound(name, default):
  try:
    return gin.query_parameter("run_pretraining." + name)
  except ValueError:  # not bound: the default
    return default
for files in json.loads(sys.argv[1]):
  gin.clear_config()
  train.parse_gin(files, [])
  encoder = train.GinEncoderConfig()
  query = lambda name: gin.query_parameter("run_pretraining." + name)
  result[files[-1]] = [encoder.hidden_size, encoder.num_layers,
      query("generator_hidden_fraction"), query("mask_prob"),
      query("learning_rate"), query("train_batch_size"),
      query("num_train_steps"), query("max_seq_length"), query("objective"),
      bound("masking_scheme", "tokens")]
print(json.dumps(result))
"""


def test_gin_files_parse_with_the_papers_settings():
  file_lists = [[name] for name in _PAPER] + [
      ["gin/small.gin", f"gin/experiments/{name}.gin"] for name in _EXPERIMENTS]
  for files in file_lists:
    with open(os.path.join(tiny_pretraining.REPO_ROOT, files[-1])) as gin_file:
      opening = gin_file.read(600)
    assert opening.startswith("#") and "Command:" in opening and (
        "Hardware:" in opening and "Expected:" in opening), files[-1]
  completed = subprocess.run(
      [sys.executable, "-c", _READ_CONFIGS, json.dumps(file_lists)],
      capture_output=True, text=True, check=False, cwd="/",
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))
  assert completed.returncode == 0, completed.stderr[-2000:]
  settings = json.loads(completed.stdout.strip().splitlines()[-1])
  for name, expected in _PAPER.items():
    assert settings[name][:8] == list(expected), name
    assert settings[name][8] == "electra"
  objectives = {name: settings[f"gin/experiments/{name}.gin"][8]
                for name in _EXPERIMENTS}
  assert objectives == {"mlm_baseline": "mlm", "electra_15": "electra_15",
                        "replace_mlm": "replace_mlm",
                        "all_tokens_mlm": "all_tokens_mlm",
                        "uniform_generator": "electra",
                        "unigram_generator": "electra",
                        "two_stage": "two_stage",
                        "adversarial": "adversarial",
                        "span_masking_electra": "electra",
                        "span_masking_mlm": "mlm"}
  schemes = {name: settings[f"gin/experiments/{name}.gin"][9]
             for name in _EXPERIMENTS}
  assert schemes == {name: "spans" if name.startswith("span_masking") else
                     "tokens" for name in _EXPERIMENTS}
  assert all(settings[name][9] == "tokens" for name in _PAPER)
