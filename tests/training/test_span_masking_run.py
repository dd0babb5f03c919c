"""Span and whole-word masking in a pretraining run: trained, recorded, resumed."""

import json

import numpy as np
import pytest

from official_electra import settings_check
from official_electra.data import pretraining_dataloader
from official_electra.data import pretraining_files
from official_electra.experiments import masking_stats
from official_electra.modeling.layers import span_masking
from official_electra.training import architecture
from official_electra.training import callbacks
from official_electra.training import pretraining_run
from official_electra.tokenization import vocabulary
from tests.training import tiny_pretraining


def _losses(model_dir):
  with open(model_dir / callbacks.METRICS_LOG_FILE) as log_file:
    return {record["step"]: record["loss"]
            for record in map(json.loads, log_file)}


def test_a_span_masked_run_records_its_scheme_and_resumes_with_the_same_masks(
    tmp_path, pretraining_data, built_pretrainers):
  tiny_pretraining.train(tmp_path / "straight", pretraining_data,
                         num_train_steps=4, masking_scheme="spans")
  tiny_pretraining.train(tmp_path / "restarted", pretraining_data,
                         num_train_steps=4, stop_after_steps=2,
                         masking_scheme="spans")
  tiny_pretraining.train(tmp_path / "restarted", pretraining_data,
                         num_train_steps=4, masking_scheme="spans")
  # The masks (and dropout) after the restart are the uninterrupted run's.
  straight, restarted = (_losses(tmp_path / "straight"),
                         _losses(tmp_path / "restarted"))
  for step in (3, 4):
    np.testing.assert_allclose(restarted[step], straight[step], atol=1e-5)
  assert straight[3] != straight[4]

  layer = built_pretrainers[0].masking
  assert isinstance(layer, span_masking.SpanMasking)
  assert layer.max_span_words == span_masking.MAX_SPAN_WORDS
  tokens = vocabulary.load_vocabulary(pretraining_data[1]).tokens
  assert layer.continuation_token_ids == span_masking.continuation_token_ids(
      tokens)
  assert layer.continuation_token_ids  # the tiny vocabulary has ## pieces
  recorded = architecture.read_architecture(str(tmp_path / "straight"))
  assert recorded.masking_scheme == "spans"

  # A run resumes only with the scheme it started with.
  with pytest.raises(architecture.ArchitectureMismatchError,
                     match="masking_scheme: checkpoint 'spans', config "
                           "'tokens'"):
    tiny_pretraining.train(tmp_path / "straight", pretraining_data,
                           num_train_steps=6)


def test_whole_word_masking_trains_the_mlm_baseline(tmp_path,
                                                     pretraining_data,
                                                     built_pretrainers):
  result = tiny_pretraining.train(tmp_path / "run", pretraining_data,
                                  num_train_steps=2, objective="mlm",
                                  masking_scheme="whole_words")
  assert result["step"] == 2
  assert built_pretrainers[0].masking.max_span_words == 1
  assert np.isfinite(list(_losses(tmp_path / "run").values())).all()


def test_a_folder_recorded_before_the_option_masked_tokens():
  recorded = {"objective": "electra", "generator_hidden_fraction": 0.25,
              "generator_layers_fraction": 1.0, "uniform_generator": False,
              "mask_prob": 0.15}
  assert architecture.PretrainingArchitecture(
      encoder=None, max_seq_length=128, special_token_ids={},
      **recorded).masking_scheme == "tokens"


def test_unknown_scheme_and_token_draws_with_spans_are_one_line_errors(
    tmp_path, pretraining_data):
  with pytest.raises(settings_check.SettingError,
                     match="run_pretraining.masking_scheme"):
    tiny_pretraining.train(tmp_path / "a", pretraining_data,
                           masking_scheme="span")
  with pytest.raises(pretraining_run.TrainingConfigError,
                     match="masking_draws='with_replacement' draws single "
                           "tokens"):
    tiny_pretraining.train(tmp_path / "b", pretraining_data,
                           masking_scheme="spans",
                           masking_draws="with_replacement")
  assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_masking_stats_measures_each_scheme_on_a_dataset(pretraining_data):
  data_dir, vocab_file, vocab_size = pretraining_data
  vocab = vocabulary.load_vocabulary(vocab_file)
  layers = masking_stats.masking_layers(vocab, tiny_pretraining.SEQ_LENGTH,
                                        0.15)
  dataset = pretraining_dataloader.pretraining_dataset(
      pretraining_files.resolve_files(str(data_dir)), 16,
      tiny_pretraining.SEQ_LENGTH, vocab_size=vocab_size, repeat=False,
      shuffle=False).take(2)
  continuation = set(span_masking.continuation_token_ids(vocab.tokens))
  results = masking_stats.measure(dataset, layers, continuation)
  for scheme, result in results.items():
    assert 0.10 < result["masked_share"] <= 0.16, scheme
    assert result["budget_met_share"] > 0.9, scheme
    assert result["mask_token_share"] < result["masked_share"], scheme
  assert results["tokens"]["mean_span_tokens"] == 1.0
  assert results["whole_words"]["mean_span_words"] == 1.0
  # Words of several pieces are masked whole, and spans hold several words.
  assert results["whole_words"]["mean_span_tokens"] > 1.0
  assert results["spans"]["mean_span_words"] > 1.3
  assert results["spans"]["longest_span_words"] <= 10
