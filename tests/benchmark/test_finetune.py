"""The fine-tuning benchmark runs and trains both with the same recipe."""

import json
import subprocess
import sys

import pytest

from official_electra.benchmark import finetune
from official_electra.benchmark import shapes
from official_electra.finetuning import trainer
from official_electra.optimization import layerwise_decay


@pytest.mark.slow
def test_command_prints_the_table_and_writes_the_json(tmp_path):
  kinds = ["ours"] + (["huggingface"] if shapes.huggingface_installed()
                      else [])
  output = tmp_path / "finetune.json"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.benchmark.finetune",
       "--model=tiny", "--batch_size=4", "--seq_len=16", "--repetitions=2",
       "--steps=1", "--warmup_steps=1", f"--implementations={','.join(kinds)}",
       f"--output={output}"],
      capture_output=True, text=True, check=False, timeout=600)
  assert completed.returncode == 0, completed.stderr[-3000:]
  assert "native bfloat16" in completed.stdout
  results = json.loads(output.read_text())
  assert list(results["implementations"]) == kinds
  assert results["flops_per_example"] > 0
  for entry in results["implementations"].values():
    assert 0 < entry["examples_per_second_min"] <= entry["examples_per_second"]
    assert entry["examples_per_second"] <= entry["examples_per_second_max"]
    assert entry["tokens_per_second"] == pytest.approx(
        16 * entry["examples_per_second"])
    assert entry["last_loss"] > 0 and entry["peak_memory_mib"] > 0


def test_hugging_face_groups_have_our_layerwise_rates_and_decay():
  torch = pytest.importorskip("torch")
  transformers = pytest.importorskip("transformers")
  del torch
  config = shapes.discriminator_config("tiny")
  model = transformers.ElectraForSequenceClassification(
      transformers.ElectraConfig(
          vocab_size=config.vocab_size, embedding_size=config.embedding_size,
          hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
          num_attention_heads=config.num_attention_heads,
          intermediate_size=config.intermediate_size, num_labels=2))
  hyperparameters = trainer.FinetuneHyperparameters()
  groups = finetune.hf_parameter_groups(model, hyperparameters,
                                        config.num_layers)
  multiplier = layerwise_decay.layerwise_learning_rate_multipliers(
      config.num_layers, hyperparameters.layerwise_decay_rate)
  # Each Hugging Face parameter and the name of its counterpart in ours.
  counterparts = {
      "electra.embeddings.word_embeddings.weight": "embeddings/word/embeddings",
      "electra.embeddings_project.weight": "embeddings_project/kernel",
      "electra.encoder.layer.0.output.dense.weight": "layer_0/output/kernel",
      "electra.encoder.layer.1.attention.output.LayerNorm.bias":
          "layer_1/attention_layer_norm/beta",
      "classifier.out_proj.weight": "classification_head/logits/kernel",
  }
  by_parameter = {id(parameter): group for group in groups
                  for parameter in group["params"]}
  for hf_name, our_name in counterparts.items():
    group = by_parameter[id(model.get_parameter(hf_name))]
    assert group["lr"] == pytest.approx(
        hyperparameters.learning_rate * multiplier(our_name)), hf_name
    assert group["weight_decay"] == (
        0.0 if "LayerNorm" in hf_name or hf_name.endswith("bias")
        else hyperparameters.weight_decay_rate)
  assert len(by_parameter) == len(list(model.parameters()))
