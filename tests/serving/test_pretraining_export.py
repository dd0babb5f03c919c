"""The pretrained towers' exports (the discriminator's, and the
generator's with `tower="generator"`) serve ids and raw text like the Keras
model, through `saved_model_cli run` in fresh processes that do not import
us."""

import ast
import os
import subprocess
import sys

import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling import model_config as model_config_lib
from official_electra.serving import op_allowlist
from official_electra.serving import pretraining_export
from official_electra.tokenization import wordpiece_tokenizer
from tests.serving import saved_model_cli
from tests.training import tiny_pretraining

_SENTENCES = ["Return the number of items.", "A tiny model reads this line."]
_SERVING_DOCS = tiny_pretraining.REPO_ROOT / "docs" / "serving.md"
_DOCS_EXPORT_DIR = "models/electra/1"


@pytest.fixture(scope="module")
def pretrained_run(tmp_path_factory):
  root = tmp_path_factory.mktemp("pretraining_export")
  data = tiny_pretraining.build_data(root)
  model_dir = root / "run"
  tiny_pretraining.train(model_dir, data, num_train_steps=2)
  return root, model_dir


@pytest.fixture(scope="module")
def exported(pretrained_run):
  root, model_dir = pretrained_run
  export_dir = str(root / "export" / "1")
  pretraining_export.export_pretrained(str(model_dir), export_dir)
  pretrainer, architecture, _ = pretraining_export.load_model(str(model_dir))
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(
      str(model_dir / "vocab.txt"), lower_case=True)
  return export_dir, pretrainer, tokenizer, architecture


@pytest.fixture(scope="module")
def exported_generator(pretrained_run):
  root, model_dir = pretrained_run
  export_dir = str(root / "generator_export" / "1")
  pretraining_export.export_pretrained(str(model_dir), export_dir,
                                       tower="generator")
  model, architecture, _ = pretraining_export.load_model(str(model_dir),
                                                         tower="generator")
  return export_dir, model, architecture


def _keras_outputs(pretrainer, features):
  sequence = pretrainer.discriminator_network(
      features, training=False)["sequence_output"]
  probability = tf.sigmoid(pretrainer.discriminator_head(sequence))
  return sequence.numpy(), probability.numpy()


def test_token_id_signature_matches_keras(exported, tmp_path):
  # Batch 3 of length 16 here; the text tests below run batches of 1 and 2
  # of length 32 through the same graph.
  export_dir, pretrainer, _, _ = exported
  rng = np.random.default_rng(0)
  for batch_size, seq_len in ((3, 16),):
    ids = rng.integers(5, 100, size=(batch_size, seq_len)).astype(np.int32)
    ids[:, 0] = 2
    mask = np.ones_like(ids)
    mask[-1, seq_len // 2:] = 0
    features = {"input_word_ids": ids, "input_mask": mask,
                "input_type_ids": np.zeros_like(ids)}
    outputs = saved_model_cli.run_signature(
        export_dir, "serving_default",
        ";".join(f"{key}={value.tolist()}"
                 for key, value in features.items()),
        str(tmp_path / f"ids_{batch_size}"))
    sequence, probability = _keras_outputs(
        pretrainer, {key: tf.constant(value) for key, value in features.items()})
    np.testing.assert_allclose(outputs["sequence_output"], sequence,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["cls_output"], sequence[:, 0],
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["replaced_probability"], probability,
                               rtol=1e-5, atol=1e-5)


def test_text_signatures_match_keras(exported, tmp_path):
  export_dir, pretrainer, tokenizer, architecture = exported
  cases = [("serve_text", f"sentence={_SENTENCES[:1]!r}", [_SENTENCES[:1]]),
           ("serve_text_pair",
            f"sentence1={_SENTENCES!r};sentence2={_SENTENCES[::-1]!r}",
            [_SENTENCES, _SENTENCES[::-1]])]
  for signature, exprs, segments in cases:
    outputs = saved_model_cli.run_signature(export_dir, signature, exprs,
                                            str(tmp_path / signature))
    packed = tokenizer.pack_inputs(
        [tokenizer.tokenize(tf.constant(texts)) for texts in segments],
        architecture.max_seq_length)
    np.testing.assert_array_equal(outputs["input_word_ids"],
                                  packed["input_word_ids"])
    sequence, probability = _keras_outputs(pretrainer, packed)
    assert outputs["sequence_output"].shape == sequence.shape
    assert outputs["replaced_probability"].shape == probability.shape
    # The encoder runs on the request's longest sequence only
    # (serving/request_length.py): real positions are the full-length
    # model's, padding positions are 0.
    real = packed["input_mask"].numpy() == 1
    assert not real.all()
    np.testing.assert_allclose(outputs["sequence_output"][real],
                               sequence[real], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(outputs["replaced_probability"][real],
                               probability[real], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outputs["sequence_output"][~real], 0.0)
    np.testing.assert_array_equal(outputs["replaced_probability"][~real], 0.0)


def test_exported_graph_has_only_servable_ops(exported):
  shown = subprocess.run(
      [saved_model_cli.SAVED_MODEL_CLI, "show", "--dir", exported[0], "--all"],
      check=True, capture_output=True, text=True).stdout
  for name in ("serving_default", "serve_text", "serve_text_pair",
               "replaced_probability", "cls_output", "sequence_output"):
    assert name in shown
  op_types = op_allowlist.list_op_types(exported[0])
  unservable = sorted(op for op in op_types
                      if not op_allowlist.is_servable_op_type(op))
  assert not unservable
  assert "FastWordpieceTokenizeWithOffsets" in op_types  # Text is in-graph.


def _token_features(batch_size, seq_len):
  rng = np.random.default_rng(0)
  ids = rng.integers(5, 100, size=(batch_size, seq_len)).astype(np.int32)
  ids[:, 0] = 2
  mask = np.ones_like(ids)
  mask[-1, seq_len // 2:] = 0
  return {"input_word_ids": ids, "input_mask": mask,
          "input_type_ids": np.zeros_like(ids)}


def test_the_generator_export_serves_its_encoder_and_its_top_tokens(
    exported_generator, tmp_path):
  export_dir, model, architecture = exported_generator
  features = _token_features(3, 16)
  outputs = saved_model_cli.run_signature(
      export_dir, "serving_default",
      ";".join(f"{key}={value.tolist()}" for key, value in features.items()),
      str(tmp_path / "ids"))
  sequence = model.generator_network(
      {key: tf.constant(value) for key, value in features.items()},
      training=False)["sequence_output"]
  probabilities = tf.nn.softmax(model.generator_head(sequence)).numpy()
  # The generator's own width, not the discriminator's.
  assert architecture.generator.hidden_size != (
      architecture.discriminator.hidden_size)
  assert outputs["sequence_output"].shape == (
      3, 16, architecture.generator.hidden_size)
  np.testing.assert_allclose(outputs["sequence_output"], sequence.numpy(),
                             rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(outputs["cls_output"], sequence.numpy()[:, 0],
                             rtol=1e-5, atol=1e-5)
  assert "replaced_probability" not in outputs
  top_ids = outputs["top_token_ids"]
  assert top_ids.shape == (3, 16, pretraining_export.TOP_TOKENS)
  # Each returned token's probability is the Keras generator's, and they are
  # its most probable ones, most probable first (robust to ties).
  np.testing.assert_allclose(
      outputs["top_token_probabilities"],
      np.take_along_axis(probabilities, top_ids, axis=-1), rtol=1e-5,
      atol=1e-6)
  np.testing.assert_allclose(
      outputs["top_token_probabilities"],
      -np.sort(-probabilities, axis=-1)[..., :pretraining_export.TOP_TOKENS],
      rtol=1e-5, atol=1e-6)
  # Raw text: the per-token outputs are 0 at padding.
  text = saved_model_cli.run_signature(
      export_dir, "serve_text", f"sentence={_SENTENCES[:1]!r}",
      str(tmp_path / "text"))
  padding = text["input_mask"] == 0
  assert padding.any()
  assert text["top_token_ids"].shape == (
      1, architecture.max_seq_length, pretraining_export.TOP_TOKENS)
  np.testing.assert_array_equal(text["top_token_ids"][padding], 0)
  np.testing.assert_array_equal(text["top_token_probabilities"][padding], 0.0)
  assert (text["top_token_probabilities"][~padding][:, 0] > 0).all()
  op_types = op_allowlist.list_op_types(export_dir)
  assert not [op for op in op_types
              if not op_allowlist.is_servable_op_type(op)]


def test_a_tower_the_folder_lacks_is_one_line_naming_the_fix(exported,
                                                             tmp_path):
  one_tower = tmp_path / "discriminator_only"
  one_tower.mkdir()
  model_config_lib.write_model_config(str(one_tower), dataclasses.replace(
      exported[3], generator=None, heads=()))
  with pytest.raises(pretraining_export.PretrainingExportError,
                     match=r"holds no generator \(only the discriminator\); "
                     "export --tower=discriminator"):
    pretraining_export.export_pretrained(str(one_tower),
                                         str(tmp_path / "out"), "generator")
  with pytest.raises(pretraining_export.PretrainingExportError,
                     match="--tower=encoder: not a tower; pass one of "
                     "discriminator, generator"):
    pretraining_export.export_pretrained(str(one_tower),
                                         str(tmp_path / "out"), "encoder")


def test_export_refuses_an_existing_folder_and_a_non_run(exported, tmp_path):
  with pytest.raises(pretraining_export.PretrainingExportError,
                     match="already exists"):
    pretraining_export.export_pretrained(str(tmp_path), exported[0])
  with pytest.raises(pretraining_export.PretrainingExportError,
                     match="model_config.json"):
    pretraining_export.export_pretrained(str(tmp_path),
                                            str(tmp_path / "out"))


def _docs_python_snippet(heading):
  """The ```python block under `heading` in docs/serving.md."""
  text = _SERVING_DOCS.read_text(encoding="utf-8")
  assert f"\n{heading}\n" in text, f"docs/serving.md lacks {heading!r}"
  section = text.split(f"\n{heading}\n", 1)[1]
  return section.split("```python\n", 1)[1].split("```", 1)[0]


def _run_python(code):
  """Runs `code` in a fresh interpreter (which imports nothing of ours)."""
  return subprocess.run([sys.executable, "-c", code], capture_output=True,
                        text=True, check=False, timeout=300,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))


def test_the_docs_python_snippet_loads_the_export(exported):
  snippet = _docs_python_snippet("## Loading an export in Python")
  assert _DOCS_EXPORT_DIR in snippet and "import tensorflow_text" in snippet
  code = snippet.replace(_DOCS_EXPORT_DIR, exported[0])
  completed = _run_python(code)
  assert completed.returncode == 0, completed.stderr[-3000:]
  probabilities = ast.literal_eval(completed.stdout.strip().splitlines()[-1])
  assert len(probabilities) == exported[3].max_seq_length
  assert all(0.0 <= value <= 1.0 for value in probabilities)
  assert probabilities[-1] == 0.0  # Padding.
  # Why the docs import tensorflow_text first.
  without = _run_python(code.replace("import tensorflow_text", "pass  #"))
  assert without.returncode != 0
  assert "Op type not registered 'NormalizeUTF8'" in without.stderr
