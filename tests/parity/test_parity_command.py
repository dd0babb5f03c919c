"""`python -m official_electra.parity` on tiny records: both sides, both
objectives, two seeds, resumable run by run, its report; bad flags."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from official_electra.parity import report
from official_electra.parity import runs
from tests.training import tiny_pretraining

pytest.importorskip("torch")
pytest.importorskip("transformers")

TINY_BINDINGS = [
    "parity_encoder.embedding_size=16", "parity_encoder.hidden_size=32",
    "parity_encoder.num_layers=2", "parity_encoder.num_attention_heads=2",
    "parity_encoder.intermediate_size=64",
    f"parity_encoder.max_position_embeddings={tiny_pretraining.SEQ_LENGTH}",
    f"parity_settings.max_seq_length={tiny_pretraining.SEQ_LENGTH}",
    "parity_settings.batch_size=4", "parity_settings.num_steps=4",
    "parity_settings.eval_every=2", "parity_settings.eval_batches=2",
    "parity_settings.shuffle_buffer_size=50",
    "parity_settings.learning_rates={'electra': 1e-3, 'mlm': 1e-3}",
]


def _command(*args):
  return subprocess.run(
      [sys.executable, "-m", "official_electra.parity", *args],
      cwd=tiny_pretraining.REPO_ROOT, capture_output=True, text=True,
      timeout=600, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


@pytest.fixture(scope="module")
def parity_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("parity")
  data_dir, vocab_file, _ = tiny_pretraining.build_data(root)
  output_dir = root / "out"
  args = [f"--train_data={data_dir}", f"--vocab_file={vocab_file}",
          f"--output_dir={output_dir}"] + [
              f"--gin_bindings={binding}" for binding in TINY_BINDINGS]
  completed = _command(*args)
  return args, output_dir, completed


@pytest.mark.slow
def test_both_sides_start_equal_and_report(parity_run):
  _, output_dir, completed = parity_run
  assert completed.returncode == 0, completed.stderr[-3000:]
  records = report.load_records(str(output_dir))
  assert sorted((r["objective"], r["side"], r["seed"]) for r in records) == [
      (objective, side, seed) for objective in ("electra", "mlm")
      for side in ("ours", "reference") for seed in (0, 1)]
  for record in records:
    assert [point["step"] for point in record["curve"]] == [0, 2, 4]
  # Step 0: the same weights evaluated on the same fixed corruptions give
  # the same metrics on both sides (eval has no dropout); other seeds start
  # elsewhere.
  by_run = {(r["objective"], r["side"], r["seed"]): r["curve"]
            for r in records}
  for objective, metrics in report.METRICS.items():
    for metric in metrics:
      if metric == "train_loss":
        continue
      values = {(side, seed): by_run[(objective, side, seed)][0][metric]
                for side in ("ours", "reference") for seed in (0, 1)}
      for seed in (0, 1):
        np.testing.assert_allclose(values[("ours", seed)],
                                   values[("reference", seed)], rtol=1e-4,
                                   err_msg=f"{objective} {metric} seed {seed}")
    assert (by_run[(objective, "ours", 0)][0]["mlm_loss"] !=
            by_run[(objective, "ours", 1)][0]["mlm_loss"])
  summary = json.loads((output_dir / "parity.json").read_text())["summary"]
  assert summary["electra"]["disc_auc"]["kept_steps"] == 3
  assert summary["mlm"]["mlm_accuracy"]["kept_steps"] == 3
  assert (output_dir / "parity.png").stat().st_size > 10_000
  markdown = (output_dir / "parity.md").read_text()
  assert "| electra | discriminator AUC, eval |" in markdown
  assert "within the seed spread" in completed.stdout


@pytest.mark.slow
def test_a_rerun_keeps_finished_runs(parity_run):
  args, output_dir, _ = parity_run
  path = output_dir / "runs" / (runs.run_name("mlm", "ours", 1) + ".json")
  before = path.read_text()
  completed = _command(*args, "--objectives=mlm", "--seeds=1",
                       "--sides=ours")
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert path.read_text() == before
  assert "step 0" not in completed.stdout


@pytest.mark.slow
@pytest.mark.parametrize("flag,expected", [
    ("--objectives=electra,replace_mlm",
     "error: --objectives: replace_mlm not implemented by the reference"),
    ("--seeds=zero", "error: --seeds=zero: give integers"),
])
def test_bad_flags_one_line(parity_run, tmp_path, flag, expected):
  args, _, _ = parity_run
  args = [arg for arg in args if not arg.startswith("--output_dir")]
  completed = _command(*args, f"--output_dir={tmp_path / 'out'}", flag)
  assert completed.returncode == 1
  assert "Traceback" not in completed.stderr
  assert completed.stderr.strip().splitlines()[-1].startswith(expected), (
      completed.stderr)
  assert not (tmp_path / "out").exists()


def test_auc_against_pair_counting():
  rng = np.random.default_rng(0)
  labels = rng.random(200) < 0.3
  scores = np.round(rng.normal(size=200) + labels, 1)  # With ties.
  positives, negatives = scores[labels], scores[~labels]
  pairs = (positives[:, None] > negatives[None, :]).mean() + 0.5 * (
      positives[:, None] == negatives[None, :]).mean()
  assert runs.auc(labels, scores) == pytest.approx(pairs, abs=1e-12)
