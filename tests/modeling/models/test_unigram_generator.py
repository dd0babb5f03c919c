"""The unigram generator (Clark et al., 2020, Section 3.2's generator
comparison, Figure 3 left): replacements drawn from the corpus's token
frequencies, which the build records in `token_counts.txt`; special tokens,
padding and ids never seen are never drawn. Then the whole path on real text:
the build's counts, `run_pretraining(unigram_generator=True)` with finite,
falling losses, and the one-line error for data built without counts."""

import json

import numpy as np
import pytest
from scipy import stats
import tensorflow as tf

from official_electra.data import dataset_info as dataset_info_lib
from official_electra.training import pretraining_run
from tests.modeling import tiny
from tests.training import tiny_pretraining

_VOCAB = tiny.TINY.vocab_size
_P_VALUE = 1e-4


def _counts():
  """Zipf-like counts over the vocabulary, with large counts on the special
  ids (which must still never be drawn) and two ids never seen."""
  counts = np.round(5000 / np.arange(1, _VOCAB + 1)).astype(np.int64)
  counts[list(tiny.SPECIAL_IDS) + [tiny.UNK_ID]] = 10 ** 6
  counts[[20, 41]] = 0
  return counts


def _draws(counts):
  """The sampled ids of the real masked slots of 8 forward passes."""
  pretrainer = tiny.pretrainer(unigram_counts=counts)
  inputs = tiny.batch(batch_size=256, pattern=False)
  samples = []
  for seed in range(8):
    seeds = tf.constant([[seed, 100 + seed, 2], [1, 2, 3]], tf.int64)
    outputs = pretrainer._forward(inputs, seeds, training=False)  # pylint: disable=protected-access
    real = outputs["masked_weights"].numpy() > 0
    samples.append(outputs["sampled_ids"].numpy()[real])
  return np.concatenate(samples)


def test_draws_follow_the_counts_and_never_a_special_or_unseen_id():
  counts = _counts()
  samples = _draws(counts)
  assert len(samples) > 8000
  drawn = np.bincount(samples, minlength=_VOCAB)
  # [UNK] is not among the pretrainer's excluded ids (the architecture zeroes
  # it): here it is drawn at its count, like any token.
  allowed = np.ones(_VOCAB, bool)
  allowed[list(tiny.SPECIAL_IDS)] = False
  allowed &= counts > 0
  assert drawn[~allowed].sum() == 0
  expected = counts[allowed] / counts[allowed].sum() * len(samples)
  assert stats.chisquare(drawn[allowed], expected).pvalue > _P_VALUE
  # Power: the same draws reject the uniform distribution over those ids.
  uniform = np.full(allowed.sum(), len(samples) / allowed.sum())
  assert stats.chisquare(drawn[allowed], uniform).pvalue < 1e-12


def test_the_architecture_never_draws_unk(tmp_path):
  from official_electra.training import architecture as architecture_lib  # pylint: disable=import-outside-toplevel
  architecture = architecture_lib.PretrainingArchitecture(
      encoder=tiny.TINY, generator_hidden_fraction=0.5,
      generator_layers_fraction=1.0, objective="electra",
      uniform_generator=False, unigram_generator=True, max_seq_length=24,
      mask_prob=0.15,
      special_token_ids={"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3,
                         "[MASK]": 4})
  pretrainer = architecture_lib.build_pretrainer(architecture, seed=0,
                                                 unigram_counts=_counts())
  probabilities = np.exp(pretrainer.unigram_log_probabilities.numpy())
  assert probabilities[[0, 1, 2, 3, 4, 20, 41]].max() == 0
  np.testing.assert_allclose(probabilities.sum(), 1.0, rtol=1e-5)
  assert pretrainer.generator_network is None
  with pytest.raises(ValueError, match="unigram_counts exactly"):
    architecture_lib.build_pretrainer(architecture, seed=0)


def test_a_unigram_generator_refuses_bad_counts_and_disallow_correct():
  with pytest.raises(ValueError, match="60 non-negative counts"):
    tiny.pretrainer(unigram_counts=np.ones(_VOCAB - 1))
  with pytest.raises(ValueError, match="not available with a unigram"):
    tiny.pretrainer(unigram_counts=_counts(), disallow_correct=True)


# The whole path on real text.


@pytest.fixture(scope="module")
def data(tmp_path_factory):
  return tiny_pretraining.build_data(tmp_path_factory.mktemp("unigram"))


def test_the_build_records_the_token_counts_of_its_records(data):
  data_dir, _, vocab_size = data
  info = dataset_info_lib.read_dataset_info(str(data_dir))
  assert info.token_counts_file == "token_counts.txt"
  recorded = dataset_info_lib.read_token_counts(str(data_dir), vocab_size)
  # An independent count: every record's real tokens, parsed as protos.
  counted = np.zeros(vocab_size, np.int64)
  for name in info.shard_files:
    for record in tf.data.TFRecordDataset(str(data_dir / name)):
      example = tf.train.Example.FromString(record.numpy())
      ids = np.array(example.features.feature["input_ids"].int64_list.value)
      mask = np.array(example.features.feature["input_mask"].int64_list.value)
      counted += np.bincount(ids[mask == 1], minlength=vocab_size)
  assert recorded == counted.tolist()
  assert sum(recorded) > 1000


def test_unigram_pretraining_has_finite_falling_losses(data, tmp_path):
  model_dir = tmp_path / "run"
  tiny_pretraining.train(model_dir, data, num_train_steps=60,
                         unigram_generator=True, save_checkpoints_steps=60,
                         learning_rate=3e-3, print_every_steps=10)
  architecture = json.loads((model_dir / "model_config.json").read_text())
  assert architecture["pretraining"]["unigram_generator"] is True
  # No generator network: the model holds the discriminator and its head.
  assert architecture["model"]["generator"] is None
  assert architecture["model"]["heads"] == ["discriminator"]
  records = [json.loads(line) for line in
             (model_dir / "train_metrics.jsonl").read_text().splitlines()]
  losses = [record["disc_loss"] for record in records]
  assert np.isfinite(losses).all()
  assert "masked_lm_loss" not in records[-1]  # no generator network
  assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5]), losses


def test_data_without_token_counts_is_one_line_error(data, tmp_path):
  import shutil  # pylint: disable=import-outside-toplevel
  data_dir, vocab_file, vocab_size = data
  old = tmp_path / "old"
  shutil.copytree(data_dir, old)
  (old / "token_counts.txt").unlink()
  with pytest.raises(dataset_info_lib.DatasetInfoError, match=(
      f"{old} has no token_counts.txt.*rebuild the data into an empty "
      "--output_dir")):
    tiny_pretraining.train(tmp_path / "run", (old, vocab_file, vocab_size),
                           unigram_generator=True)
  assert not (tmp_path / "run").exists()
  with pytest.raises(pretraining_run.TrainingConfigError,
                     match="choose one"):
    tiny_pretraining.train(tmp_path / "run", data, unigram_generator=True,
                           uniform_generator=True)
