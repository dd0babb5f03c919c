"""Every file of a tiny run on a filesystem that is not the local one.

TPU users keep corpora, model_dirs and exports on `gs://`; every read and
write of the data tool, pretraining, fine-tuning and both exports goes
through `tf.io.gfile`, so any TensorFlow filesystem works. This test puts
every path of the whole chain (conversion included) under TensorFlow's in-memory `ram://`
filesystem, which Python's `open` and `os` cannot see: a file written or
read outside `tf.io.gfile` fails the test. It runs in one process (a
`ram://` filesystem lives in its process).
"""

import json
import random

import gin
import numpy as np
import tensorflow as tf

from official_electra import finetune
from official_electra.conversion import converters
from official_electra.modeling import model_config
from official_electra.serving import classifier_export
from official_electra.serving import pretraining_export
from tests.training import tiny_pretraining
from tfrecords_tools import build_pretraining_dataset
from tfrecords_tools import build_vocab
from tfrecords_tools import sample_corpus

_ROOT = "ram://electra_chain"
_WORDS = {1: ("good", "great", "fine"), 0: ("bad", "awful", "dull")}


def _write(path, text):
  with tf.io.gfile.GFile(path, "w") as output_file:
    output_file.write(text)


def _glue_sst2(glue_dir):
  rng = random.Random(0)
  for split, size in (("train", 64), ("dev", 16)):
    labels = [rng.randint(0, 1) for _ in range(size)]
    rows = [f"the movie is {rng.choice(_WORDS[label])} .\t{label}"
            for label in labels]
    _write(f"{glue_dir}/SST-2/{split}.tsv",
           "sentence\tlabel\n" + "\n".join(rows) + "\n")


def _local_paths_written(tmp_path):
  return sorted(str(path.relative_to(tmp_path))
                for path in tmp_path.rglob("*"))


def test_corpus_to_exports_with_every_path_under_ram(tmp_path, monkeypatch):
  # Nothing may land in the working folder either: run from an empty one.
  monkeypatch.chdir(tmp_path)
  local_corpus = tmp_path / "corpus.txt"
  sample_corpus.write_stdlib_corpus(str(local_corpus), 60_000)
  corpus = f"{_ROOT}/corpus/stdlib.txt"
  tf.io.gfile.makedirs(f"{_ROOT}/corpus")
  tf.io.gfile.copy(str(local_corpus), corpus)
  local_corpus.unlink()

  # The data tool: vocabulary and records.
  vocab_file = f"{_ROOT}/vocab.txt"
  tokens = build_vocab.build_vocab(corpus, vocab_file, 400, True)
  data_dir = f"{_ROOT}/data"
  build_pretraining_dataset.build_pretraining_dataset(
      f"{_ROOT}/corpus/*.txt", vocab_file, data_dir,
      max_seq_length=tiny_pretraining.SEQ_LENGTH, num_shards=2)
  assert tf.io.gfile.glob(f"{data_dir}/*.tfrecord*"), tf.io.gfile.listdir(
      data_dir)

  # Pretraining, stopped and resumed (checkpoints, model config, logs).
  model_dir = f"{_ROOT}/pretraining"
  data = (data_dir, vocab_file, len(tokens))
  tiny_pretraining.train(model_dir, data, num_train_steps=4,
                         stop_after_steps=2)
  tiny_pretraining.train(model_dir, data, num_train_steps=4)
  names = tf.io.gfile.listdir(model_dir)
  for expected in ("model_config.json", "vocab.txt", "checkpoint",
                   "train_metrics.jsonl"):
    assert expected in names, names
  with tf.io.gfile.GFile(f"{model_dir}/train_metrics.jsonl") as log_file:
    steps = [json.loads(line)["step"] for line in log_file]
  assert steps[-1] == 4, steps

  # Export of the discriminator, loaded back from ram://.
  export_dir = f"{_ROOT}/exports/discriminator/1"
  pretraining_export.export_pretrained(model_dir, export_dir)
  served = tf.saved_model.load(export_dir)
  ids = np.full((1, 8), 7, np.int32)
  ids[0, 0] = 2
  outputs = served.signatures["serving_default"](
      input_word_ids=tf.constant(ids), input_mask=tf.ones_like(ids),
      input_type_ids=tf.zeros_like(ids))
  assert outputs["sequence_output"].shape[:2] == (1, 8)

  # Conversion: the original's TF1 names and back, then the import exported.
  tf1_prefix = f"{_ROOT}/tf1/model.ckpt"
  converters.export_tf1(model_dir, tf1_prefix)
  recorded = model_config.read_model_config(model_dir).model
  imported_dir = f"{_ROOT}/imported"
  converters.import_tf1(tf1_prefix, recorded.discriminator,
                        recorded.generator, imported_dir, vocab_file)
  assert "model_config.json" in tf.io.gfile.listdir(imported_dir)
  pretraining_export.export_pretrained(
      imported_dir, f"{_ROOT}/exports/imported/1")
  reimported = tf.saved_model.load(f"{_ROOT}/exports/imported/1")
  np.testing.assert_allclose(
      reimported.signatures["serving_default"](
          input_word_ids=tf.constant(ids), input_mask=tf.ones_like(ids),
          input_type_ids=tf.zeros_like(ids))["sequence_output"],
      outputs["sequence_output"], rtol=1e-5, atol=1e-5)

  # Fine-tuning from the ram:// model_dir, on GLUE files under ram://.
  glue_dir = f"{_ROOT}/glue"
  _glue_sst2(glue_dir)
  gin.clear_config()
  try:
    finetune._parse_gin(["gin/glue/recipe.gin"], [
        "glue_hyperparameters.max_seq_length = 16",
        "glue_hyperparameters.batch_size = 16",
        "glue_hyperparameters.num_train_epochs = 1",
        "glue_hyperparameters.learning_rate = 1e-3"])
    finetuned_dir = f"{_ROOT}/finetuned"
    results = finetune.run("SST-2", glue_dir, model_dir, finetuned_dir,
                           None, True, 1)
  finally:
    gin.clear_config()
  assert 0.0 <= results["SST-2"]["median"]["accuracy"] <= 1.0
  assert tf.io.gfile.exists(f"{finetuned_dir}/eval_results.json")

  # Export of the classifier, loaded back from ram:// and run on raw text.
  classifier_dir = f"{_ROOT}/exports/sst2/1"
  classifier_export.export_classifier(f"{finetuned_dir}/SST-2", classifier_dir)
  classifier = tf.saved_model.load(classifier_dir)
  probabilities = classifier.signatures["serving_default"](
      sentence=tf.constant(["the movie is good ."]))["probabilities"]
  np.testing.assert_allclose(tf.reduce_sum(probabilities, -1), [1.0],
                             rtol=1e-5)

  assert _local_paths_written(tmp_path) == []
