"""The original's sampling and masking options reach the pretrainer."""

import gin
import pytest

from official_electra.training import pretraining_run
from tests.training import tiny_pretraining


# `run_pretraining` as official_electra.train registers it, under a module
# name of its own: importing the entry point here would define its absl
# flags a second time in a test process that imported another entry point.
gin.external_configurable(pretraining_run.run_pretraining, "run_pretraining",
                          module="options_test")


def test_options_are_gin_parameters_of_run_pretraining():
  gin.clear_config()
  try:
    gin.parse_config([
        "options_test.run_pretraining.disallow_correct = True",
        "options_test.run_pretraining.masking_draws = 'with_replacement'"])
    assert gin.query_parameter(
        "options_test.run_pretraining.disallow_correct") is True
    assert gin.query_parameter(
        "options_test.run_pretraining.masking_draws") == "with_replacement"
  finally:
    gin.clear_config()


def test_a_run_with_the_originals_options_trains(tmp_path, pretraining_data,
                                                 built_pretrainers):
  result = tiny_pretraining.train(tmp_path / "run", pretraining_data,
                                  num_train_steps=2, disallow_correct=True,
                                  masking_draws="with_replacement")
  assert result["step"] == 2
  (pretrainer,) = built_pretrainers
  assert pretrainer.sampler.disallow_correct
  assert pretrainer.masking.draws == "with_replacement"


def test_unknown_masking_draws_is_a_config_error(tmp_path, pretraining_data):
  with pytest.raises(pretraining_run.TrainingConfigError,
                     match="run_pretraining.masking_draws"):
    tiny_pretraining.train(tmp_path / "run", pretraining_data,
                           masking_draws="without_replacment")
