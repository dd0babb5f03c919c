"""The pretraining benchmark runs its implementations and reports them."""

import json
import math
import os
import pathlib
import subprocess
import sys

import pytest
import tensorflow as tf
import tf_keras
from official.nlp.modeling.models import electra_pretrainer as garden

from official_electra.benchmark import pretrain
from official_electra.benchmark import pretrain_steps

TINY = dict(model="tiny", batch_size=2, seq_len=16, jit_compile=False)


@pytest.fixture
def restore_policy_and_sampler(monkeypatch):
  # monkeypatch puts Model Garden's sampler back after the test.
  monkeypatch.setattr(garden, "sample_from_softmax",
                      garden.sample_from_softmax)
  yield
  tf_keras.mixed_precision.set_global_policy("float32")


def test_model_garden_cannot_build_its_step_under_mixed_bfloat16_unpatched(
    restore_policy_and_sampler, monkeypatch):
  del restore_policy_and_sampler
  monkeypatch.setattr(pretrain_steps, "patch_model_garden_sampler", lambda: None)
  step = pretrain_steps.build_tensorflow(
      "model_garden", dict(TINY, mixed_precision="mixed_bfloat16"))
  with pytest.raises((TypeError, tf.errors.InvalidArgumentError),
                     match="bfloat16"):
    step()


def test_model_garden_trains_under_mixed_bfloat16_with_the_patched_sampler(
    restore_policy_and_sampler):
  del restore_policy_and_sampler
  step = pretrain_steps.build_tensorflow(
      "model_garden", dict(TINY, mixed_precision="mixed_bfloat16"))
  losses = [step() for _ in range(2)]
  assert all(math.isfinite(loss) and loss > 0 for loss in losses)
  patched = garden.sample_from_softmax
  assert patched.casts_logits_to_float32
  pretrain_steps.patch_model_garden_sampler()  # Idempotent: wraps only once.
  assert garden.sample_from_softmax is patched


def test_command_prints_the_table_and_writes_the_json(tmp_path):
  # One implementation in its own precision beside the others' float32 (the
  # comparison a user makes: our mixed_bfloat16 against Model Garden's
  # float32), and the ratios over it.
  kinds = [kind for kind in ("ours", "model_garden", "huggingface")
           if pretrain.available(kind)] + ["ours:mixed_bfloat16"]
  output = tmp_path / "bench.json"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.benchmark.pretrain",
       "--model=tiny", "--batch_size=2", "--seq_len=16", "--repetitions=2",
       "--steps=1", "--warmup_steps=1", f"--implementations={','.join(kinds)}",
       "--reference=model_garden", f"--output={output}"],
      capture_output=True, text=True, check=False, timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  results = json.loads(output.read_text())
  assert list(results["implementations"]) == kinds
  assert results["matmul_peak_flops"] > results["step_matmul_flops"] > 0
  assert set(results["precisions"]) == {"float32", "mixed_bfloat16"}
  assert results["precisions"]["float32"]["matmul_peak_flops"] == (
      results["matmul_peak_flops"])
  for rates in results["precisions"].values():
    assert rates["matmul_peak_flops"] > rates["step_matmul_flops"] > 0
  timings = results["step_matmuls"]
  assert results["step_matmul_flops"] == pytest.approx(
      sum(t["count"] * t["flops"] for t in timings) /
      sum(t["count"] * t["seconds"] for t in timings))
  assert "the step's matmuls, each timed alone" in completed.stdout
  garden = results["implementations"]["model_garden"]
  for kind, entry in results["implementations"].items():
    assert (entry["implementation"], entry["mixed_precision"]) == (
        tuple(kind.split(":")) if ":" in kind else (kind, "float32"))
    rates = results["precisions"][entry["mixed_precision"]]
    assert entry["ratio_to_reference"] == pytest.approx(
        entry["examples_per_second"] / garden["examples_per_second"])
    assert entry["examples_per_second_min"] <= entry["examples_per_second"]
    assert entry["examples_per_second"] <= entry["examples_per_second_max"]
    assert entry["tokens_per_second"] == pytest.approx(
        16 * entry["examples_per_second"])
    assert entry["mfu"] == pytest.approx(
        entry["examples_per_second"] * results["flops_per_example"] /
        rates["matmul_peak_flops"])
    assert entry["fraction_of_step_matmuls"] == pytest.approx(
        entry["examples_per_second"] * results["flops_per_example"] /
        rates["step_matmul_flops"])
    assert entry["peak_memory_mib"] > 0
    assert f"\n{kind}" in completed.stdout
  assert garden["ratio_to_reference"] == pytest.approx(1.0)
  assert "\nours:mixed_bfloat16 " in completed.stdout
  assert "mixed_bfloat16: matmul peak" in completed.stdout


def _results(ceiling, gpu_memory):
  entry = {"examples_per_second": 10.0, "examples_per_second_min": 9.0,
           "examples_per_second_max": 11.0, "tokens_per_second": 1280.0,
           "mfu": 0.4, "fraction_of_step_matmuls": 0.9 if ceiling else None,
           "peak_memory_mib": 3000.0, "gpu_peak_memory_mib": gpu_memory,
           "ratio_to_reference": None}
  return {"settings": dict(TINY, mixed_precision="float32"),
          "flops_per_example": 9e9, "matmul_peak_flops": 3e11,
          "step_matmul_flops": ceiling, "step_matmuls": None,
          "precisions": {"float32": {"matmul_peak_flops": 3e11,
                                     "step_matmul_flops": ceiling}},
          "reference": "model_garden", "implementations": {"ours": entry}}


def test_an_implementation_spec_names_a_known_kind_and_precision():
  with pytest.raises(ValueError, match="unknown precision 'bf16'"):
    pretrain.parse_implementation("ours:bf16", "float32")
  with pytest.raises(ValueError, match="unknown implementation 'mine'"):
    pretrain.parse_implementation("mine", "float32")
  assert pretrain.parse_implementation("model_garden:float32",
                                       "mixed_bfloat16") == (
                                           "model_garden", "float32")
  assert pretrain.parse_implementation("ours", "mixed_bfloat16") == (
      "ours", "mixed_bfloat16")


def test_table_on_a_cpu_has_the_ceiling_and_no_gpu_column():
  table = pretrain.format_table(_results(1.2e11, None))
  assert "matmuls alone 120 GFLOP/s" in table
  assert "GPU MiB" not in table
  assert table.splitlines()[-1].split()[-2:] == ["90%", "3000"]


def test_table_lists_the_matmul_shapes_with_the_largest_share_first():
  results = _results(1.2e11, None)
  results["step_matmuls"] = [
      dict(product="nt", batch=128, m=128, k=64, n=128, count=24,
           seconds=0.004, flops=2.0 * 128 * 128 * 64 * 128),
      dict(product="nn", batch=1, m=4096, k=256, n=1024, count=12,
           seconds=0.003, flops=2.0 * 4096 * 256 * 1024)]
  results["step_matmuls"] += [
      dict(product="tn", batch=1, m=64, k=4096, n=64, count=1,
           seconds=0.0002 * (10 - i), flops=2.0 * 64 * 4096 * 64)
      for i in range(10)]
  lines = pretrain.format_table(results).splitlines()
  start = lines.index(next(line for line in lines
                           if line.startswith("the step's matmuls")))
  assert "143 ms" in lines[start]  # 96 + 36 + (2 + 1.8 + ... + 0.2) ms.
  first = lines[start + 1].split()
  assert first[:5] == ["nt", "128", "x", "[128,64]", "x"]
  assert first[6:] == ["x24", "96.0", "ms", "67%", "67", "GFLOP/s"]
  assert lines[start + 2].split()[:4] == ["nn", "[4096,256]", "x",
                                          "[256,1024]"]
  assert len(lines) == start + 12  # Ten shapes, then the rest in one line.
  assert lines[-1] == "  2 more shapes: 0.6 ms (0%)"


def test_table_on_a_gpu_has_no_ceiling_and_the_gpu_memory():
  table = pretrain.format_table(_results(None, 5000.0))
  assert "not timed on a GPU" in table
  assert "GPU MiB" in table
  assert table.splitlines()[-1].split()[-3:] == ["-", "3000", "5000"]


def test_gpu_script_stops_with_one_line_when_there_is_no_gpu(tmp_path):
  if tf.config.list_physical_devices("GPU"):
    pytest.skip("a GPU is visible: the script would run the benchmarks")
  script = pathlib.Path(__file__).resolve().parents[2] / "scripts" / (
      "gpu_benchmark.sh")
  output = tmp_path / "out"
  completed = subprocess.run(
      ["bash", str(script), str(output)], capture_output=True, text=True,
      check=False, timeout=120, env=dict(os.environ, PYTHON=sys.executable))
  assert completed.returncode == 1
  assert not output.exists()
  assert completed.stderr.strip().splitlines()[-1] == (
      "scripts/gpu_benchmark.sh: no GPU visible to TensorFlow; run it on a "
      "machine with one (and a CUDA build of TensorFlow)")
