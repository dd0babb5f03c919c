"""Runs a test helper module in a fresh Python (for devices that must be
configured before TensorFlow starts) and reads the JSON it prints last."""

import json
import os
import pathlib
import subprocess
import sys

REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]


def last_json_line(module, timeout=300):
  completed = subprocess.run(
      [sys.executable, "-m", module], cwd=REPO_ROOT, capture_output=True,
      text=True, timeout=timeout,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert completed.returncode == 0, completed.stderr[-3000:]
  return json.loads(completed.stdout.splitlines()[-1])
