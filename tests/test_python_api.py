"""The Python API: docs/python_api.md's example runs as written, every kind of
checkpoint folder loads, anything else is one line, and the documented names
are the package's public ones."""

import os
import re

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer's ops for loading

import official_electra as electra
from official_electra.conversion import converters
from official_electra.modeling import model_config
from tests.training import tiny_pretraining

DOCS = tiny_pretraining.REPO_ROOT / "docs" / "python_api.md"
_SENTENCES = ["the play was wonderful .", "the book was dull .", "a film"]


def _python_blocks():
  return re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"),
                    flags=re.DOTALL)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
  """The docs' python blocks run in order, in a working folder where a tiny
  pretraining left `runs/quickstart/model` (as the quickstart would)."""
  work_dir = tmp_path_factory.mktemp("python_api")
  data = tiny_pretraining.build_data(work_dir)
  model_dir = work_dir / "runs" / "quickstart" / "model"
  tiny_pretraining.train(model_dir, data, num_train_steps=4)
  namespace = {"__name__": "__main__"}
  previous = os.getcwd()
  os.chdir(work_dir)
  try:
    for block in _python_blocks():
      exec(compile(block, str(DOCS), "exec"), namespace)  # pylint: disable=exec-used
  finally:
    os.chdir(previous)
  return work_dir, namespace


def _inputs(preprocessor, sentences=_SENTENCES):
  return preprocessor(tf.constant(sentences))


def test_reloaded_classifier_and_export_give_the_same_predictions(example):
  work_dir, namespace = example
  preprocessor, classifier = namespace["preprocessor"], namespace["classifier"]
  reloaded = namespace["reloaded"]
  inputs = _inputs(preprocessor)
  expected = classifier(inputs, training=False).numpy()
  np.testing.assert_array_equal(reloaded(inputs, training=False).numpy(),
                                expected)
  served = tf.saved_model.load(str(work_dir / "runs" / "reviews_export" / "1"))
  prediction = served.signatures["serving_default"](
      sentence=tf.constant(_SENTENCES))
  probabilities = tf.nn.softmax(expected, axis=-1).numpy()
  np.testing.assert_allclose(prediction["probabilities"].numpy(),
                             probabilities, rtol=1e-5, atol=1e-6)
  labels = np.array(["negative", "positive"])[probabilities.argmax(-1)]
  assert [label.decode() for label in prediction["label"].numpy()] == list(
      labels)
  assert float(namespace["difference"]) == 0.0


def test_the_preprocessor_packs_to_the_recorded_length_or_per_batch(example):
  work_dir, namespace = example
  checkpoint = str(work_dir / "runs" / "quickstart" / "model")
  fixed = electra.load_preprocessor(checkpoint)
  assert fixed.sequence_length == tiny_pretraining.SEQ_LENGTH
  packed = _inputs(fixed)
  assert packed["input_word_ids"].shape == (3, tiny_pretraining.SEQ_LENGTH)
  cut = _inputs(namespace["preprocessor"])
  longest = int(packed["input_mask"].numpy().sum(axis=1).max())
  for name, value in cut.items():
    np.testing.assert_array_equal(value.numpy(),
                                  packed[name].numpy()[:, :longest])
  pair = fixed((tf.constant(["a film ."]), tf.constant(["the book"])))
  assert pair["input_type_ids"].numpy().max() == 1
  in_graph = tf.data.Dataset.from_tensor_slices(_SENTENCES).batch(3).map(fixed)
  np.testing.assert_array_equal(
      next(iter(in_graph))["input_word_ids"].numpy(),
      packed["input_word_ids"].numpy())


def _sequence_output(encoder, inputs):
  return encoder(inputs, training=False)["sequence_output"].numpy()


def test_every_kind_of_checkpoint_folder_loads(example, tmp_path):
  work_dir, namespace = example
  runs = work_dir / "runs"
  model_dir = str(runs / "quickstart" / "model")
  inputs = _inputs(namespace["preprocessor"])
  pretrained = electra.load_encoder(model_dir)
  expected = _sequence_output(pretrained, inputs)
  outputs = pretrained(inputs, training=False)
  np.testing.assert_array_equal(outputs["cls_output"].numpy(),
                                expected[:, 0])
  prefix = tf.train.latest_checkpoint(model_dir)
  np.testing.assert_array_equal(
      _sequence_output(electra.load_encoder(prefix), inputs), expected)
  # A converted import: the run exported under the original's TF1 names and
  # imported back (official_electra.convert's two directions).
  recorded = model_config.read_model_config(model_dir).model
  converters.export_tf1(model_dir, str(tmp_path / "tf1" / "model"))
  converters.import_tf1(str(tmp_path / "tf1" / "model"),
                        recorded.discriminator, recorded.generator,
                        str(tmp_path / "imported"),
                        vocab_file=os.path.join(model_dir, "vocab.txt"))
  np.testing.assert_allclose(
      _sequence_output(electra.load_encoder(str(tmp_path / "imported")),
                       inputs), expected, rtol=1e-6, atol=1e-6)
  # The fine-tuned folder and the saved encoder of the example.
  np.testing.assert_array_equal(
      _sequence_output(electra.load_encoder(str(runs / "reviews")), inputs),
      _sequence_output(namespace["classifier"].encoder, inputs))
  np.testing.assert_array_equal(
      _sequence_output(electra.load_encoder(str(runs / "reviews_encoder")),
                       inputs),
      _sequence_output(namespace["own_encoder"], inputs))
  generator = electra.load_encoder(model_dir, tower="generator")
  assert generator.hidden_size == recorded.generator.hidden_size
  # The generator's export serves the encoder just loaded.
  export_dir = str(tmp_path / "generator_export" / "1")
  assert electra.export_saved_model(model_dir, export_dir,
                                    tower="generator") == export_dir
  served = tf.saved_model.load(export_dir).signatures["serving_default"](
      **{name: tf.cast(value, tf.int32) for name, value in inputs.items()})
  np.testing.assert_allclose(served["sequence_output"].numpy(),
                             _sequence_output(generator, inputs), rtol=1e-5,
                             atol=1e-5)
  with pytest.raises(electra.UserError, match="exports its own encoder"):
    electra.export_saved_model(str(runs / "reviews"), str(tmp_path / "x"),
                               tower="generator")


@pytest.mark.parametrize("kind", ["empty", "other_files", "missing", "file"])
def test_a_folder_that_is_none_of_them_is_one_line(tmp_path, kind):
  path = tmp_path / "folder"
  if kind != "missing":
    path.mkdir()
  if kind == "other_files":
    (path / "notes.txt").write_text("not a checkpoint")
  if kind == "file":
    path = path / "notes.txt"
    path.write_text("not a checkpoint")
  with pytest.raises(electra.CheckpointError) as raised:
    electra.load_encoder(str(path))
  message = str(raised.value)
  assert "\n" not in message and "pass a pretraining model_dir" in message
  assert str(path) in message or str(path.parent) in message


def test_the_example_needs_only_the_public_names():
  assert set(electra.__all__) <= set(dir(electra))
  for name in electra.__all__:
    assert getattr(electra, name).__doc__, name
  code = "\n".join(_python_blocks())
  used = set(re.findall(r"\belectra\.(\w+)", code))
  assert used <= set(electra.__all__), used - set(electra.__all__)
  assert not re.search(r"official_electra\.|from official_electra", code)
  table = DOCS.read_text(encoding="utf-8").split("## A complete example")[0]
  first_column = re.findall(r"^\| (.*?) \|", table, flags=re.MULTILINE)
  documented = set(re.findall(r"`(\w+)", " ".join(first_column[1:])))
  assert documented == set(electra.__all__)
