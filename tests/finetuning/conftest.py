"""Fixtures for the fine-tuning tests: a tiny vocabulary, GLUE folder and gin file."""

import random

import pytest

_WORDS = ("good", "great", "fine", "bad", "awful", "dull", "the", "movie",
          "film", "is", "a", "plot", ".", "cat", "dog", "sat", "ran")
_POSITIVE = ("good", "great", "fine")
_NEGATIVE = ("bad", "awful", "dull")


@pytest.fixture
def tiny_vocab_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                             *_WORDS]) + "\n", encoding="utf-8")
  return path


def _sentiment_sentence(rng, label):
  word = rng.choice(_POSITIVE if label else _NEGATIVE)
  return f"the {rng.choice(['movie', 'film', 'plot'])} is {word} ."


@pytest.fixture
def tiny_glue_dir(tmp_path):
  """SST-2 (learnable: the label is the adjective's polarity), STS-B and RTE."""
  rng = random.Random(0)
  glue_dir = tmp_path / "glue"
  sst = glue_dir / "SST-2"
  sst.mkdir(parents=True)
  for split, size in (("train", 256), ("dev", 64)):
    labels = [rng.randint(0, 1) for _ in range(size)]
    rows = [f"{_sentiment_sentence(rng, label)}\t{label}" for label in labels]
    (sst / f"{split}.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n")
  test_rows = [f"{i}\t{_sentiment_sentence(rng, i % 2)}" for i in range(10)]
  (sst / "test.tsv").write_text("index\tsentence\n" + "\n".join(test_rows) + "\n")
  sts = glue_dir / "STS-B"
  sts.mkdir()
  header = ("index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
            "sentence1\tsentence2")
  for split in ("train", "dev"):
    rows = [f"{i}\tg\tf\ty\t{i}\tn\tn\ta cat sat .\tthe dog ran .\t{i % 6}.0"
            for i in range(40)]
    (sts / f"{split}.tsv").write_text(header + "\tscore\n" + "\n".join(rows) + "\n")
  (sts / "test.tsv").write_text(
      header + "\n" + "\n".join(f"{i}\tg\tf\ty\t{i}\tn\tn\ta cat .\ta dog ."
                                for i in range(5)) + "\n")
  rte = glue_dir / "RTE"
  rte.mkdir()
  labels = ("entailment", "not_entailment")
  for split in ("train", "dev"):
    rows = [f"{i}\tthe cat sat .\tthe cat ran .\t{labels[i % 2]}"
            for i in range(40)]
    (rte / f"{split}.tsv").write_text(
        "index\tsentence1\tsentence2\tlabel\n" + "\n".join(rows) + "\n")
  return glue_dir


@pytest.fixture
def tiny_gin_file(tmp_path):
  path = tmp_path / "tiny.gin"
  path.write_text(f"""
include 'gin/glue/recipe.gin'
glue_encoder.vocab_size = {5 + len(_WORDS)}
glue_encoder.embedding_size = 16
glue_encoder.hidden_size = 32
glue_encoder.num_layers = 2
glue_encoder.num_attention_heads = 2
glue_encoder.intermediate_size = 64
glue_encoder.max_position_embeddings = 32
glue_hyperparameters.learning_rate = 1e-3
glue_hyperparameters.layerwise_decay_rate = 0.8
glue_hyperparameters.max_seq_length = 16
glue_hyperparameters.batch_size = 16
glue_hyperparameters.num_train_epochs = 4
""")
  return path
