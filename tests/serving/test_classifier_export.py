"""The exported GLUE classifier predicts what the Keras model predicts."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  registers the tokenizer's ops for loading

from official_electra import files
from official_electra.data import glue
from official_electra.finetuning import glue_family
from official_electra.finetuning import inputs
from official_electra.finetuning import tasks
from official_electra.finetuning import trainer
from official_electra.modeling import classifier_checkpoint
from official_electra.modeling import encoder_config
from official_electra.serving import classifier_export
from official_electra.serving import op_allowlist
from official_electra.tokenization import wordpiece_tokenizer

_MAX_SEQ_LENGTH = 12
_SENTENCES = ["The movie is good .", "the FILM is awful!", "a dull plot",
              "the cat sat and the dog ran and the cat ran ."]


@pytest.fixture
def tiny_vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  words = ["the", "movie", "film", "is", "good", "awful", "a", "dull", "plot",
           ".", "!", "cat", "dog", "sat", "ran", "and"]
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                             *words]) + "\n", encoding="utf-8")
  return path


def _finetuned_run(tmp_path, vocab_file, task_name):
  """A seed folder as finetune writes it, with random weights."""
  task = tasks.get_task(task_name)
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(vocab_file, lower_case=True)
  config = encoder_config.EncoderConfig(
      vocab_size=tokenizer.vocab_size, embedding_size=16, hidden_size=32,
      num_layers=2, num_attention_heads=2, intermediate_size=64,
      max_position_embeddings=32)
  hyperparameters = trainer.FinetuneHyperparameters(
      max_seq_length=_MAX_SEQ_LENGTH)
  classifier = glue_family.build_classifier(config, task, hyperparameters)
  run_dir = str(tmp_path / task_name / "seed_0")
  classifier_checkpoint.save_classifier(
        classifier, run_dir, tokenizer, hyperparameters.max_seq_length,
        task.name, task.labels, task.is_pair_task)
  return classifier, tokenizer, task, run_dir


def _keras_logits(classifier, tokenizer, examples):
  features = inputs.encode_examples(examples, tokenizer, _MAX_SEQ_LENGTH)
  return classifier(features, training=False).numpy()


def _saved_model_cli(export_dir, signature, input_exprs, out_dir):
  """Runs `saved_model_cli run` in a fresh process that imports only TF and TF Text."""
  code = ("import sys, tensorflow_text\n"
          "from tensorflow.python.tools import saved_model_cli\n"
          "sys.argv = ['saved_model_cli'] + sys.argv[1:]\n"
          "saved_model_cli.main()\n")
  completed = subprocess.run(
      [sys.executable, "-c", code, "run", "--dir", export_dir, "--tag_set",
       "serve", "--signature_def", signature, "--input_exprs", input_exprs,
       "--outdir", out_dir],
      check=False, cwd=os.path.dirname(out_dir), capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert completed.returncode == 0, completed.stderr[-2000:]
  return {name[:-4]: np.load(os.path.join(out_dir, name), allow_pickle=True)
          for name in os.listdir(out_dir)}


def test_single_sentence_export_matches_keras_through_saved_model_cli(
    tmp_path, tiny_vocab_file):
  classifier, tokenizer, task, run_dir = _finetuned_run(
      tmp_path, tiny_vocab_file, "SST-2")
  files.write_json(str(tmp_path / "SST-2" / "eval_results.json"),
                     {"selected_seed": 0})
  export_dir = str(tmp_path / "export" / "1")
  assert classifier_export.export_classifier(
      str(tmp_path / "SST-2"), export_dir) == run_dir

  examples = [glue.GlueExample(str(i), text, None, None)
              for i, text in enumerate(_SENTENCES)]
  expected_probabilities = tf.nn.softmax(
      _keras_logits(classifier, tokenizer, examples)).numpy()
  expected_labels = [task.labels[i] for i in expected_probabilities.argmax(-1)]

  text_outputs = _saved_model_cli(
      export_dir, "serving_default", f"sentence={_SENTENCES!r}",
      str(tmp_path / "text_outputs"))
  np.testing.assert_allclose(text_outputs["probabilities"],
                             expected_probabilities, rtol=1e-5, atol=1e-6)
  assert [label.decode() for label in text_outputs["label"]] == expected_labels

  features = inputs.encode_examples(examples, tokenizer, _MAX_SEQ_LENGTH)
  ids_exprs = ";".join(f"{key}={value.tolist()}"
                       for key, value in features.items())
  ids_outputs = _saved_model_cli(export_dir, "serve_token_ids", ids_exprs,
                                 str(tmp_path / "ids_outputs"))
  np.testing.assert_allclose(ids_outputs["probabilities"],
                             expected_probabilities, rtol=1e-5, atol=1e-6)

  op_types = op_allowlist.check_serving_op_types(export_dir)
  assert not any(op.startswith("TFText>") for op in op_types)


def test_pair_regression_export_returns_scores(tmp_path, tiny_vocab_file):
  classifier, tokenizer, _, run_dir = _finetuned_run(
      tmp_path, tiny_vocab_file, "STS-B")
  export_dir = str(tmp_path / "sts_export")
  classifier_export.export_classifier(run_dir, export_dir)
  examples = [glue.GlueExample(str(i), first, second, None)
              for i, (first, second) in enumerate(
                  zip(_SENTENCES, reversed(_SENTENCES)))]
  expected_scores = _keras_logits(classifier, tokenizer, examples)[:, 0]
  serve = tf.saved_model.load(export_dir).signatures["serving_default"]
  scores = serve(sentence1=tf.constant(_SENTENCES),
                 sentence2=tf.constant(list(reversed(_SENTENCES))))["score"]
  np.testing.assert_allclose(scores, expected_scores, rtol=1e-5, atol=1e-6)


def test_export_errors_are_clear(tmp_path, tiny_vocab_file):
  with pytest.raises(classifier_export.ExportError,
                     match="not a fine-tuned seed folder"):
    classifier_export.export_classifier(str(tmp_path), str(tmp_path / "out"))
  with pytest.raises(classifier_export.ExportError, match="already exists"):
    classifier_export.export_classifier(str(tmp_path), str(tmp_path))


def test_a_finetuning_model_dir_of_one_task_exports_that_task(
    tmp_path, tiny_vocab_file):
  # `finetune --task=WNLI --model_dir=runs/ft`, then `export
  # --finetuned_dir=runs/ft`.
  model_dir = tmp_path / "ft"
  _, _, _, run_dir = _finetuned_run(model_dir, tiny_vocab_file, "WNLI")
  files.write_json(str(model_dir / "WNLI" / "eval_results.json"),
                   {"selected_seed": 0})
  files.write_json(str(model_dir / "eval_results.json"),
                   {"WNLI": {"selected_seed": 0}})
  (model_dir / "submission").mkdir()
  assert classifier_export.export_classifier(
      str(model_dir), str(tmp_path / "export")) == run_dir

  _finetuned_run(model_dir, tiny_vocab_file, "RTE")
  with pytest.raises(classifier_export.ExportError, match=re.escape(
      f"{model_dir} holds 2 fine-tuned tasks (RTE, WNLI): pass one of them, "
      f"e.g. --finetuned_dir={model_dir / 'RTE'}")):
    classifier_export.export_classifier(str(model_dir),
                                        str(tmp_path / "export_2"))
