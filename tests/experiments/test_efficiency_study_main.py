"""`python -m official_electra.efficiency_study` end to end, on a minuscule budget.

One docstring corpus, a learnable SST-2 made up here, the tiny model, ELECTRA
and MLM to the same FLOPs, two kept checkpoints each, one seed.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import pytest

from official_electra.training import callbacks
from tests.training import tiny_pretraining
from tfrecords_tools import sample_corpus

_ENVIRONMENT = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3",
                    CUDA_VISIBLE_DEVICES="", PYTHONUNBUFFERED="1")
_GIN = """
include 'gin/experiments/cpu_efficiency.gin'
study_encoder.embedding_size = 16
study_encoder.hidden_size = 32
study_encoder.num_layers = 2
study_encoder.num_attention_heads = 2
study_encoder.intermediate_size = 64
study_encoder.max_position_embeddings = 32
efficiency_study.budget_flops = 7.5e9
efficiency_study.checkpoint_fractions = (0.5, 1.0)
efficiency_study.vocab_size = 400
efficiency_study.num_shards = 2
efficiency_study.num_seeds = 1
efficiency_study.pretraining = {
    'train_batch_size': 8, 'max_seq_length': 32,
    'generator_hidden_fraction': 0.5, 'learning_rate': 1e-3,
    'save_checkpoints_steps': 20, 'keep_checkpoint_max': 2,
    'steps_per_execution': 5, 'print_every_steps': 1000,
    'shuffle_buffer_size': 100, 'seed': 0,
}
study_finetuning.learning_rate = 1e-3
study_finetuning.max_seq_length = 16
study_finetuning.batch_size = 16
study_finetuning.num_train_epochs = 2
"""
_POSITIVE = ("good", "great", "fine")
_NEGATIVE = ("bad", "awful", "dull")


@pytest.fixture(scope="module")
def study_inputs(tmp_path_factory):
  root = tmp_path_factory.mktemp("study_inputs")
  corpus = root / "corpus.txt"
  sample_corpus.write_stdlib_corpus(str(corpus), 150_000)
  rng = random.Random(0)
  sst = root / "glue" / "SST-2"
  sst.mkdir(parents=True)
  for split, size in (("train", 128), ("dev", 64)):
    labels = [rng.randint(0, 1) for _ in range(size)]
    rows = [f"the film is {rng.choice(_POSITIVE if label else _NEGATIVE)} ."
            f"\t{label}" for label in labels]
    (sst / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) +
                                      "\n")
  gin_file = root / "study.gin"
  gin_file.write_text(_GIN)
  return corpus, root / "glue", gin_file


def _command(inputs, output_dir):
  corpus, glue_dir, gin_file = inputs
  return [sys.executable, "-m", "official_electra.efficiency_study",
          f"--gin_file={gin_file}", f"--corpus={corpus}",
          f"--glue_dir={glue_dir}", "--tasks=SST-2", "--variants=electra,mlm",
          f"--output_dir={output_dir}"]


def _run(inputs, output_dir, cwd=tiny_pretraining.REPO_ROOT):
  return subprocess.run(
      _command(inputs, output_dir), capture_output=True, text=True,
      timeout=600, cwd=cwd,
      env=dict(_ENVIRONMENT, PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))


@pytest.fixture(scope="module")
def finished_study(study_inputs, tmp_path_factory):
  # A relative --output_dir, as users type it (the kept checkpoints must
  # still be found from their own folders).
  root = tmp_path_factory.mktemp("study")
  completed = _run(study_inputs, "study", cwd=root)
  assert completed.returncode == 0, completed.stderr[-3000:]
  return root / "study", completed


def _scores(output_dir):
  results = json.loads((output_dir / "results.json").read_text())
  return {(run["variant"], run["step"], run["task"], run["seed"]): run["score"]
          for run in results["runs"]}


def test_the_study_writes_results_table_and_figure(finished_study):
  output_dir, completed = finished_study
  results = json.loads((output_dir / "results.json").read_text())
  variants = {plan["name"]: plan for plan in results["variants"]}
  assert set(variants) == {"electra", "mlm"}
  # Random init, then two kept checkpoints per variant, one seed on SST-2.
  assert sorted({(run["variant"], run["step"]) for run in results["runs"]}) == (
      sorted([("random_init", 0)] + [
          (name, step) for name, plan in variants.items()
          for step in plan["checkpoint_steps"]]))
  for run in results["runs"]:
    assert run["task"] == "SST-2" and run["metric"] == "accuracy"
    assert 0.0 <= run["score"] <= 1.0
    if run["variant"] == "electra":
      assert 0.0 <= run["pretraining"]["disc_auc"] <= 1.0
  table = (output_dir / "results.md").read_text()
  assert "| random_init | 0 |" in table and "| electra |" in table
  # Every encoder is also probed frozen, with both features.
  probed = sorted({(probe["variant"], probe["step"], probe["feature"])
                   for probe in results["probes"]})
  assert probed == sorted(
      (variant, step, feature)
      for variant, step in {(run["variant"], run["step"])
                            for run in results["runs"]}
      for feature in ("first_token", "mean"))
  for probe in results["probes"]:
    assert probe["task"] == "SST-2" and 0.0 <= probe["score"] <= 1.0
    assert (output_dir / "probe" / (
        "random_init" if probe["variant"] == "random_init"
        else f"{probe['variant']}_step_{probe['step']}") / "SST-2.json").exists()
  assert "Linear probes of the frozen encoders" in table
  # Paired by seed: each objective against random init, and the two at the
  # same fraction of the budget.
  assert sorted((row["a"], row["b"], row["fraction"])
                for row in results["paired"]) == [
      ("electra", "mlm", 0.5), ("electra", "mlm", 1.0),
      ("electra", "random_init", 0.5), ("electra", "random_init", 1.0),
      ("mlm", "random_init", 0.5), ("mlm", "random_init", 1.0)]
  assert "Paired differences" in table
  png = (output_dir / "results.png").read_bytes()
  assert png.startswith(b"\x89PNG") and len(png) > 5000
  assert "[study] done" in completed.stdout
  assert "ETA" in completed.stdout


def test_kept_checkpoints_have_the_same_training_flops(finished_study):
  output_dir, _ = finished_study
  results = json.loads((output_dir / "results.json").read_text())
  by_fraction = {}
  for run in results["runs"]:
    if run["variant"] != "random_init":
      by_fraction.setdefault(round(run["fraction"], 2), set()).add(
          (run["variant"], run["train_flops"]))
  assert sorted(by_fraction) == [0.5, 1.0]
  for fraction, points in by_fraction.items():
    values = [train_flops for _, train_flops in points]
    assert len(values) == 2, points
    assert max(values) / min(values) - 1 <= 0.01, (fraction, points)
    assert abs(max(values) / (fraction * results["budget_flops"]) - 1) <= 0.01
  mlm, electra = (next(plan for plan in results["variants"]
                       if plan["name"] == name) for name in ("mlm", "electra"))
  assert mlm["num_train_steps"] > electra["num_train_steps"]
  # On the count the gin file binds (cpu_efficiency.gin's matmul count), the
  # one the pretraining runs' logs name, with the plans' FLOPs.
  assert results["flops_count"] == "matmul"
  for plan in results["variants"]:
    log_file = output_dir / "pretrain" / plan["name"] / (
        callbacks.METRICS_LOG_FILE)
    records = [json.loads(line) for line in log_file.read_text().splitlines()]
    assert {record["flops_count"] for record in records} == {"matmul"}
    assert records[-1]["step"] == plan["num_train_steps"]
    assert records[-1]["train_flops"] == (
        plan["num_train_steps"] * plan["train_flops_per_step"])


def test_a_rerun_skips_every_finished_part(finished_study, study_inputs):
  output_dir, _ = finished_study
  seed_files = sorted(output_dir.glob("finetune/*/*/seed_*/eval_results.json"))
  assert len(seed_files) == 5
  stamps = [path.stat().st_mtime_ns for path in seed_files]
  checkpoints_before = sorted(output_dir.glob("pretrain/*/ckpt-*.index"))
  scores = _scores(output_dir)
  completed = _run(study_inputs, output_dir)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "pretrained" not in completed.stdout
  assert [path.stat().st_mtime_ns for path in seed_files] == stamps
  assert sorted(output_dir.glob("pretrain/*/ckpt-*.index")) == (
      checkpoints_before)
  assert _scores(output_dir) == scores
  assert "probed" in completed.stdout  # from the cached probe files


def test_the_study_runs_unchanged_on_other_glue_tasks(finished_study,
                                                      study_inputs, tmp_path):
  # A regression task and a pair task, made up here, on a copy of the
  # finished study: pretraining is reused, each task gets its own metric
  # (one variant, to keep the suite short).
  output_dir = tmp_path / "study"
  shutil.copytree(finished_study[0], output_dir)
  corpus, _, gin_file = study_inputs
  glue_dir = tmp_path / "glue"
  rng = random.Random(1)
  for task in ("STS-B", "RTE"):
    (glue_dir / task).mkdir(parents=True)
    for split, size in (("train", 64), ("dev", 32)):
      rows = []
      for index in range(size):
        word = rng.choice(_POSITIVE + _NEGATIVE)
        first, second = f"the film is {word} .", f"it is {rng.choice(_POSITIVE)} ."
        if task == "STS-B":
          score = 5.0 if word in _POSITIVE else rng.uniform(0, 2)
          rows.append(f"{index}\tg\tf\t2012\t{index}\ts1\ts2\t{first}\t"
                      f"{second}\t{score:.2f}")
        else:
          label = "entailment" if word in _POSITIVE else "not_entailment"
          rows.append(f"{index}\t{first}\t{second}\t{label}")
      header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
                "sentence1\tsentence2\tscore" if task == "STS-B" else
                "index\tsentence1\tsentence2\tlabel")
      (glue_dir / task / f"{split}.tsv").write_text(
          header + "\n" + "\n".join(rows) + "\n")
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.efficiency_study",
       f"--gin_file={gin_file}", f"--corpus={corpus}",
       f"--glue_dir={glue_dir}", "--tasks=STS-B,RTE",
       "--variants=electra", f"--output_dir={output_dir}"],
      capture_output=True, text=True, timeout=600,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(_ENVIRONMENT, PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "pretrained" not in completed.stdout
  results = json.loads((output_dir / "results.json").read_text())
  assert results["tasks"] == ["STS-B", "RTE"]
  metrics = {(run["task"], run["metric"]) for run in results["runs"]}
  assert metrics == {("STS-B", "spearman"), ("RTE", "accuracy")}
  assert len(results["runs"]) == 2 * 3  # random init + 2 kept, one seed
  for run in results["runs"]:
    assert -1.0 <= run["score"] <= 1.0
  assert {(probe["task"], probe["metric"]) for probe in results["probes"]} == (
      metrics)
  table = (output_dir / "results.md").read_text()
  assert "STS-B (spearman)" in table and "RTE (accuracy)" in table


def _start(inputs, output_dir):
  return subprocess.Popen(_command(inputs, output_dir),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=_ENVIRONMENT,
                          cwd=tiny_pretraining.REPO_ROOT)


def _wait_for(process, pattern):
  deadline = time.monotonic() + 500
  while not list(pattern()):
    assert process.poll() is None, "the study ended before it was stopped"
    assert time.monotonic() < deadline
    time.sleep(0.2)


def test_a_preempted_then_killed_study_resumes_to_the_same_results(
    finished_study, study_inputs, tmp_path):
  reference_dir, _ = finished_study
  output_dir = tmp_path / "stopped"
  # The finished study's vocabulary and records: the build recognises them
  # (their own resume is tested with the data tool), so the time goes to the
  # pretraining that is stopped here.
  output_dir.mkdir()
  shutil.copy(reference_dir / "vocab.txt", output_dir / "vocab.txt")
  shutil.copytree(reference_dir / "data", output_dir / "data")
  data_stamps = _stamps(output_dir / "data")
  # Random init's fine-tuning and probe do not depend on pretraining: the
  # finished study's are kept, so the time goes to what is resumed here.
  for part in ("finetune", "probe"):
    shutil.copytree(reference_dir / part / "random_init",
                    output_dir / part / "random_init")
  electra_dir, mlm_dir = (output_dir / "pretrain" / name
                          for name in ("electra", "mlm"))
  # SIGTERM during ELECTRA's pretraining: saved, exit 75 (rerun to continue).
  process = _start(study_inputs, output_dir)
  _wait_for(process, lambda: electra_dir.glob("ckpt-*.index"))
  process.send_signal(signal.SIGTERM)
  _, stderr = process.communicate(timeout=300)
  assert process.returncode == 75, stderr[-3000:]
  assert "preempted" in stderr.splitlines()[-1]
  # Saved at the step it stopped at, past the periodic checkpoint awaited.
  stopped_step = _logged_steps(electra_dir)[-1]
  assert _saved_step(electra_dir) == stopped_step, stopped_step
  # The rerun continues; kill -9 it once MLM has written a checkpoint.
  process = _start(study_inputs, output_dir)
  _wait_for(process, lambda: [] if _saved_step(mlm_dir) is None else [True])
  process.send_signal(signal.SIGKILL)
  process.communicate()
  killed_step = _saved_step(mlm_dir)
  mlm_steps_before = _logged_steps(mlm_dir)
  completed = _run(study_inputs, output_dir)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert _scores(output_dir) == _scores(reference_dir)
  assert _stamps(output_dir / "data") == data_stamps
  # Each rerun started at the checkpoint it found (a study that pretrained
  # again from step 0 would reach the same scores, but log the steps again):
  # ELECTRA's log is the uninterrupted one, MLM's repeats only the steps the
  # kill lost.
  assert _logged_steps(electra_dir) == _logged_steps(
      reference_dir / "pretrain" / "electra")
  assert _logged_steps(mlm_dir) == mlm_steps_before + [
      step for step in _logged_steps(reference_dir / "pretrain" / "mlm")
      if step > killed_step]


def _logged_steps(model_dir):
  """The steps of a pretraining run's metrics log, in the order written."""
  lines = (model_dir / callbacks.METRICS_LOG_FILE).read_text().splitlines()
  return [json.loads(line)["step"] for line in lines]


def _saved_step(model_dir):
  """The step of the checkpoint a rerun resumes from (None before one)."""
  state = model_dir / "checkpoint"  # Replaced whole by each save.
  if not state.exists():
    return None
  latest = state.read_text().splitlines()[0]  # model_checkpoint_path: "..."
  return int(latest.strip().strip('"').rsplit("-", 1)[1])


def _stamps(folder):
  return {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}


def test_a_budget_too_small_to_match_flops_is_one_error_line(study_inputs,
                                                             tmp_path):
  completed = subprocess.run(
      _command(study_inputs, tmp_path / "small") +
      ["--gin_bindings=efficiency_study.budget_flops=1e8"],
      capture_output=True, text=True, timeout=300, env=_ENVIRONMENT,
      cwd=tiny_pretraining.REPO_ROOT)
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith("error: budget_flops=1e+08")
  assert "raise budget_flops" in lines[-1]
  assert "Traceback" not in completed.stderr


@pytest.mark.parametrize("names, message", [
    ("('mlm',)", "names 'mlm', which trains no generator network"),
    ("('two_stage',)", "names 'two_stage', which this study does not "
     "pretrain"),
])
def test_generators_to_fine_tune_are_checked_before_any_work(
    study_inputs, tmp_path, names, message):
  completed = subprocess.run(
      _command(study_inputs, tmp_path / "out") +
      [f"--gin_bindings=efficiency_study.finetune_generators={names}"],
      capture_output=True, text=True, timeout=300, env=_ENVIRONMENT,
      cwd=tiny_pretraining.REPO_ROOT)
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith("error: efficiency_study.finetune_generators "
                              + message), lines[-1]
  assert "Traceback" not in completed.stderr
  assert not (tmp_path / "out").exists()


def test_task_adaptive_text_and_bfloat16_pretraining(study_inputs, tmp_path):
  # The tasks' training sentences (never dev) join the corpus, pretraining
  # runs under mixed_bfloat16 and fine-tuning after it in float32.
  corpus, _, gin_file = study_inputs
  glue_dir = tmp_path / "glue"
  (glue_dir / "SST-2").mkdir(parents=True)
  rng = random.Random(2)
  for split, size in (("train", 96), ("dev", 32)):
    rows = [f"the {split}only film is "
            f"{rng.choice(_POSITIVE if label else _NEGATIVE)} .\t{label}"
            for label in (rng.randint(0, 1) for _ in range(size))]
    (glue_dir / "SST-2" / f"{split}.tsv").write_text(
        "sentence\tlabel\n" + "\n".join(rows) + "\n")
  output_dir = tmp_path / "tapt"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.efficiency_study",
       f"--gin_file={gin_file}", f"--corpus={corpus}",
       f"--glue_dir={glue_dir}", "--tasks=SST-2", "--variants=electra",
       f"--output_dir={output_dir}",
       "--gin_bindings=efficiency_study.task_text_copies=2",
       "--gin_bindings=efficiency_study.checkpoint_fractions=(1.0,)",
       "--gin_bindings=efficiency_study.linear_probe=False",
       "--gin_bindings=efficiency_study.selection_probe=True",
       "--gin_bindings=efficiency_study.pretraining = {"
       "'train_batch_size': 8, 'max_seq_length': 32, "
       "'generator_hidden_fraction': 0.5, 'learning_rate': 1e-3, "
       "'save_checkpoints_steps': 20, 'keep_checkpoint_max': 2, "
       "'steps_per_execution': 5, 'print_every_steps': 1000, "
       "'shuffle_buffer_size': 100, 'seed': 0, "
       "'mixed_precision': 'mixed_bfloat16'}"],
      capture_output=True, text=True, timeout=600,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(_ENVIRONMENT, PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))
  assert completed.returncode == 0, completed.stderr[-3000:]
  text = (output_dir / "task_text.txt").read_text()
  assert text.count("the trainonly film is") == 2 * 96
  assert "devonly" not in text and "\t" not in text
  info = json.loads((output_dir / "data" / "dataset_info.json").read_text())
  assert info["input_files"][-1].endswith("task_text.txt")
  assert "in mixed_bfloat16, checkpoints at" in completed.stdout
  results = json.loads((output_dir / "results.json").read_text())
  assert {(run["variant"], run["task"]) for run in results["runs"]} == {
      ("random_init", "SST-2"), ("electra", "SST-2")}
  assert [(row["a"], row["b"]) for row in results["paired"]] == [
      ("electra", "random_init")]
  # The selection probe (training data only) of both encoders, no dev probe.
  assert results["probes"] == []
  assert sorted((probe["variant"], probe["feature"])
                for probe in results["selection_probes"]) == [
      ("electra", "first_token"), ("electra", "mean"),
      ("random_init", "first_token"), ("random_init", "mean")]
  assert len(list((output_dir / "selection_probe").glob("*/SST-2.json"))) == 2
  assert "Selection probes" in (output_dir / "results.md").read_text()


def _run_from(source, inputs, output_dir, *extra):
  _, glue_dir, gin_file = inputs
  return subprocess.run(
      [sys.executable, "-m", "official_electra.efficiency_study",
       f"--gin_file={gin_file}", f"--glue_dir={glue_dir}", "--tasks=SST-2",
       "--variants=electra,mlm", f"--output_dir={output_dir}",
       f"--pretrained_from={source}", *extra],
      capture_output=True, text=True, timeout=600,
      cwd=tiny_pretraining.REPO_ROOT,
      env=dict(_ENVIRONMENT, PYTHONPATH=str(tiny_pretraining.REPO_ROOT)))


@pytest.fixture(scope="module")
def fine_tuned_from(finished_study, study_inputs, tmp_path_factory):
  """Another fine-tuning protocol on the finished study's encoders, with
  ELECTRA's generator towers fine-tuned as encoders too (issue 44); the
  source's file stamps before the run."""
  source = finished_study[0]
  stamps = {path: path.stat().st_mtime_ns for path in source.rglob("*")}
  output_dir = tmp_path_factory.mktemp("from") / "protocol"
  completed = _run_from(source, study_inputs, output_dir,
                        "--gin_bindings=study_finetuning.num_train_epochs=1",
                        "--gin_bindings=efficiency_study.linear_probe=False",
                        "--gin_bindings=efficiency_study.finetune_generators="
                        "('electra',)")
  assert completed.returncode == 0, completed.stderr[-3000:]
  return output_dir, completed, stamps


def test_pretrained_from_fine_tunes_another_studys_checkpoints(
    finished_study, fine_tuned_from):
  # Nothing pretrained or built here, the source study only read.
  source = finished_study[0]
  output_dir, completed, stamps = fine_tuned_from
  assert "[study] pretrained" not in completed.stdout
  assert {path: path.stat().st_mtime_ns
          for path in source.rglob("*")} == stamps
  assert sorted(path.name for path in output_dir.iterdir()) == [
      "finetune", "results.json", "results.md", "results.png"]
  results = json.loads((output_dir / "results.json").read_text())
  assert results["pretrained_from"] == str(source)
  assert results["finetuning"]["num_train_epochs"] == 1
  assert {(run["variant"], run["step"]) for run in results["runs"]
          if run["variant"] != "electra_generator"} == {
      (variant, step) for variant, step, _, _ in _scores(source)}
  # The source's 5 encoders and ELECTRA's 2 generators, one seed each.
  seed_files = list(output_dir.glob("finetune/*/SST-2/seed_0/eval_results.json"))
  assert len(seed_files) == 5 + 2


def test_random_init_alone_at_another_width(finished_study, study_inputs,
                                             tmp_path):
  # No variant: random init alone, here narrower than the study's encoder
  # (the same-size baseline of a generator fine-tuned as an encoder).
  output_dir = tmp_path / "random_only"
  completed = _run_from(finished_study[0], study_inputs, output_dir,
                        "--variants=",
                        "--gin_bindings=study_encoder.hidden_size=16",
                        "--gin_bindings=study_encoder.intermediate_size=64",
                        "--gin_bindings=study_encoder.num_attention_heads=1",
                        "--gin_bindings=study_finetuning.num_train_epochs=1",
                        "--gin_bindings=efficiency_study.linear_probe=False")
  assert completed.returncode == 0, completed.stderr[-3000:]
  results = json.loads((output_dir / "results.json").read_text())
  assert results["encoder"]["hidden_size"] == 16
  assert [(run["variant"], run["task"], run["seed"])
          for run in results["runs"]] == [("random_init", "SST-2", 0)]
  config = json.loads((output_dir / "finetune" / "random_init" / "SST-2" /
                       "seed_0" / "model_config.json").read_text())
  assert config["model"]["discriminator"]["hidden_size"] == 16


@pytest.mark.parametrize("extra, message", [
    (("--gin_bindings=efficiency_study.checkpoint_fractions=(0.25, 1.0)",),
     "not kept, so --pretrained_from="),
    (("--gin_bindings=efficiency_study.budget_flops=1.5e10",),
     "not kept, so --pretrained_from="),
    (("--corpus=corpus.txt",), "drop --corpus"),
])
def test_pretrained_from_refuses_what_the_source_cannot_give(
    finished_study, study_inputs, tmp_path, extra, message):
  completed = _run_from(finished_study[0], study_inputs, tmp_path / "out",
                        *extra)
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith("error: ") and message in lines[-1]
  assert "Traceback" not in completed.stderr
  assert not (tmp_path / "out" / "finetune").exists()


def test_pretrained_from_a_folder_that_is_no_study(study_inputs, tmp_path):
  completed = _run_from(tmp_path, study_inputs, tmp_path / "out")
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith(
      f"error: {tmp_path}: no vocab.txt, so not a study's output_dir")
  assert "Traceback" not in completed.stderr


def test_the_study_fine_tunes_electras_generator_beside_its_discriminator(
    fine_tuned_from):
  # Issue 44: the generator tower as an encoder, a variant of its own.
  output_dir, _, _ = fine_tuned_from
  results = json.loads((output_dir / "results.json").read_text())
  variants = {(run["variant"], run["step"]) for run in results["runs"]}
  electra_steps = {step for variant, step in variants if variant == "electra"}
  # MLM has no generator network: no mlm_generator row.
  assert {step for variant, step in variants
          if variant == "electra_generator"} == electra_steps
  assert not any(variant == "mlm_generator" for variant, _ in variants)
  generator_run = next(
      output_dir.glob("finetune/electra_generator_step_*/SST-2/seed_0"))
  config = json.loads((generator_run / "model_config.json").read_text())
  # The study's tiny encoder is 32 wide, its generator half of it.
  assert config["model"]["discriminator"]["hidden_size"] == 16
  paired = {(row["a"], row["b"]) for row in results["paired"]}
  assert ("electra_generator", "random_init") in paired
  assert ("electra", "electra_generator") in paired or (
      "electra_generator", "electra") in paired
  assert "electra_generator" in (output_dir / "results.md").read_text()


def _record(finished_study, tmp_path, change=None, keep=lambda run: True):
  """A copy of the finished study's results.json, as another machine left
  it: only the runs `keep` passes, then `change(record)` applied."""
  record = json.loads((finished_study[0] / "results.json").read_text())
  record["runs"] = [run for run in record["runs"] if keep(run)]
  if change:
    change(record)
  path = tmp_path / "record.json"
  path.write_text(json.dumps(record))
  return path


def _electra_metric_moved(record):
  run = next(run for run in record["runs"] if run["variant"] == "electra")
  run["pretraining"]["disc_auc"] += 1e-9
  return run["step"]


def _learning_rate_changed(record):
  record["finetuning"]["learning_rate"] *= 2


def test_finished_runs_from_another_machine_are_not_fine_tuned_again(
    finished_study, study_inputs, tmp_path):
  # The record holds seed 0 of random init and ELECTRA, not MLM's, and one
  # ELECTRA checkpoint of it was pretrained otherwise (its recorded metrics
  # differ in the last bit): those runs are not this encoder's. The study
  # now asks for two seeds; seed 0 of every encoder comes first
  # (seed-major), so a study stopped at any point compares them all.
  moved = []
  record = _record(finished_study, tmp_path,
                   lambda record: moved.append(_electra_metric_moved(record)),
                   keep=lambda run: run["variant"] != "mlm")
  output_dir = tmp_path / "next_machine"
  completed = _run_from(finished_study[0], study_inputs, output_dir,
                        f"--finished_runs_from={record}",
                        "--gin_bindings=efficiency_study.num_seeds=2",
                        "--gin_bindings=efficiency_study.linear_probe=False")
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert f"restored 2 finished fine-tuning runs from {record}" in (
      completed.stdout)
  assert (f"not restored: the runs of electra_step_{moved[0]} in {record} "
          "fine-tuned another encoder (pretraining disc_auc ") in (
              completed.stdout)
  trained = [line.split("] fine-tuned ", 1)[1].split(":")[0]
             for line in completed.stdout.splitlines()
             if "] fine-tuned " in line]
  reference = _scores(finished_study[0])
  encoders = ["random_init"] + [f"{variant}_step_{step}" for variant, step,
                                _, _ in reference if variant != "random_init"]
  assert sorted(trained[:3]) == sorted(
      f"{encoder} on SST-2, seed 0" for encoder in encoders
      if encoder.startswith("mlm") or encoder == f"electra_step_{moved[0]}")
  assert sorted(trained[3:]) == sorted(f"{encoder} on SST-2, seed 1"
                                       for encoder in encoders)
  # The task is tokenised once for both seed passes.
  assert completed.stdout.count("] tokenised SST-2 in ") == 1, (
      completed.stdout)
  restored = [json.loads(path.read_text()) for path in
              output_dir.glob("finetune/*/SST-2/seed_*/eval_results.json")]
  assert sorted(run.get("restored_from") is not None for run in restored) == (
      [False] * 8 + [True] * 2)
  # Seed 0's scores are the finished study's, restored or fine-tuned again.
  scores = _scores(output_dir)
  assert {key: score for key, score in scores.items() if key[3] == 0} == (
      reference)
  assert len(scores) == 10


@pytest.mark.parametrize("change, message", [
    (_learning_rate_changed, "its runs were made on other settings: the "
     "fine-tuning learning_rate 0.002 in the record, 0.001 here"),
    ("not json", "not a study's results.json"),
])
def test_a_record_of_other_settings_is_refused(
    finished_study, study_inputs, tmp_path, change, message):
  if isinstance(change, str):
    record = tmp_path / "record.json"
    record.write_text(change)
  else:
    record = _record(finished_study, tmp_path, change)
  completed = _run_from(finished_study[0], study_inputs, tmp_path / "out",
                        f"--finished_runs_from={record}")
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith(f"error: {record}: ") and message in lines[-1], (
      lines[-1])
  assert "Traceback" not in completed.stderr
  assert not list((tmp_path / "out").glob("finetune/*/*/seed_*/*"))


def test_a_vocabulary_without_special_tokens_is_one_error_line(study_inputs,
                                                               tmp_path):
  vocab = tmp_path / "vocab.txt"
  vocab.write_text("the\nfilm\n")
  completed = subprocess.run(
      _command(study_inputs, tmp_path / "out") + [f"--vocab_file={vocab}"],
      capture_output=True, text=True, timeout=300, env=_ENVIRONMENT,
      cwd=tiny_pretraining.REPO_ROOT)
  lines = [line for line in completed.stderr.splitlines() if line.strip()]
  assert completed.returncode == 1
  assert lines[-1].startswith(f"error: vocabulary file {vocab} lacks the "
                              "special tokens [PAD] [UNK] [CLS]"), lines[-1]
  assert "Traceback" not in completed.stderr
  assert not (tmp_path / "out").exists()
