"""Running an export through `saved_model_cli` in a fresh process that does
not import official_electra (as TF Serving would load it)."""

import os
import subprocess
import sys

import numpy as np

SAVED_MODEL_CLI = os.path.join(os.path.dirname(sys.executable),
                               "saved_model_cli")
# `saved_model_cli run` imports the whole graph, text functions included, so
# the process must register the TF Text ops (as TF Serving's binary does):
# saved_model_cli with only tensorflow_text imported, not official_electra.
SAVED_MODEL_CLI_WITH_TF_TEXT = [
    sys.executable, "-c",
    "import sys, tensorflow_text\n"
    "from tensorflow.python.tools import saved_model_cli\n"
    "sys.argv = ['saved_model_cli'] + sys.argv[1:]\n"
    "saved_model_cli.main()\n"]


def run_signature(export_dir, signature, input_exprs, out_dir):
  """`{output name: array}` of one signature call, from a fresh process."""
  completed = subprocess.run(
      SAVED_MODEL_CLI_WITH_TF_TEXT + [
          "run", "--dir", export_dir, "--tag_set", "serve", "--signature_def",
          signature, "--input_exprs", input_exprs, "--outdir", out_dir],
      check=False, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert completed.returncode == 0, completed.stderr[-2000:]
  return {name[:-4]: np.load(os.path.join(out_dir, name), allow_pickle=True)
          for name in os.listdir(out_dir)}
