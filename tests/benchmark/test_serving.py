"""The serving benchmark runs end to end and serves what Hugging Face serves."""

import json
import subprocess
import sys

import pytest

from official_electra.benchmark import serving
from official_electra.benchmark import serving_models
from official_electra.benchmark import shapes

_CASES = ["classifier pair text", "classifier pair token_ids",
          "discriminator pair text", "discriminator pair token_ids"]


@pytest.fixture(scope="module")
def command_run(tmp_path_factory):
  """One tiny run of the command (with Hugging Face when it is installed):
  generated vocabulary and text, pairs only (the single-sentence cases take
  the same code paths), batches of 1 and 2."""
  output = tmp_path_factory.mktemp("serving") / "serving.json"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.benchmark.serving",
       "--model=tiny", "--batch_sizes=1,2", "--repetitions=1",
       "--latency_calls=2", "--seq_len=128", "--glue_dir=", "--vocab_file=",
       "--inputs=pair", f"--output={output}"],
      capture_output=True, text=True, check=False, timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  return json.loads(output.read_text()), completed.stdout


@pytest.mark.slow
def test_command_prints_the_table_and_writes_the_json(command_run):
  results, stdout = command_run
  assert "b1 p50 ms" in stdout and "b2 ex/s" in stdout
  assert "native bfloat16" in stdout
  assert results["text_source"] == "generated, GLUE-like lengths"
  assert set(results["cpu"]) == {"model_name", "bfloat16", "cores"}
  assert list(results["cases"]) == _CASES
  for case, entries in results["cases"].items():
    expected = {"ours"}
    if shapes.huggingface_installed():
      expected |= ({"huggingface", "huggingface_longest"}
                   if case.endswith("text") else {"huggingface"})
    assert set(entries) == expected
    for entry in entries.values():
      assert set(entry["batches"]) == {"1", "2"}
      assert entry["batches"]["1"]["requests"] == 2
      for batch in entry["batches"].values():
        assert 0 < batch["latency_ms_median"] <= batch["latency_ms_p99"]
        assert batch["examples_per_second"] > 0
  ours = results["workers"]["ours"]
  assert ours["load_seconds"] > 0 and ours["peak_memory_mib"] > 0
  # As TF Serving: the SavedModels are served without the project's model,
  # tokenizer or export code.
  assert ours["official_electra_modules"]
  assert not [name for name in ours["official_electra_modules"]
              if name.startswith(("official_electra.modeling",
                                  "official_electra.tokenization",
                                  "official_electra.serving",
                                  "official_electra.finetuning"))]


@pytest.mark.slow
def test_our_savedmodels_compute_what_hugging_face_computes(command_run):
  pytest.importorskip("torch")
  pytest.importorskip("transformers")
  results, _ = command_run
  for entries in results["cases"].values():
    for label in set(entries) - {"ours"}:
      assert entries[label]["max_abs_difference_to_ours"] < 1e-4, label


def test_requests_continue_through_the_data():
  assert serving._requests(0, 2, 2, 5) == [[0, 1], [2, 3]]  # pylint: disable=protected-access
  assert serving._requests(1, 2, 2, 5) == [[4, 0], [1, 2]]  # pylint: disable=protected-access
  assert serving._percentile(list(range(1, 101)), 0.99) == 99  # pylint: disable=protected-access
  assert serving._percentile([3.0], 0.99) == 3.0  # pylint: disable=protected-access


def test_generated_text_has_glue_like_lengths(tmp_path):
  vocab_file = serving_models.write_generated_vocabulary(tmp_path / "vocab.txt")
  texts = serving_models.generate_texts(vocab_file, count=200)
  assert [len(row) for row in texts["single"]] == [1] * 200
  assert [len(row) for row in texts["pair"]] == [2] * 200
  words = [len(row[0].split()) for row in texts["single"]]
  assert 14 < sum(words) / len(words) < 24


def test_glue_dev_text_is_read(shared_data_dir):
  texts = serving_models.read_glue_texts(str(shared_data_dir / "glue"))
  assert len(texts["single"]) == 872 and len(texts["pair"]) == 408
  assert serving_models.read_glue_texts(str(shared_data_dir / "absent")) is None
