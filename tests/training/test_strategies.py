"""Strategy creation by name, and its errors."""

import pytest
import tensorflow as tf

from official_electra.training import strategies


def test_one_device_and_auto_on_a_cpu_machine(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  for name in ("one_device", "auto"):
    strategy = strategies.create_strategy(name)
    assert isinstance(strategy, tf.distribute.OneDeviceStrategy)
    assert strategies.is_chief(strategy)


def test_errors_name_the_fix(monkeypatch):
  monkeypatch.delenv("TF_CONFIG", raising=False)
  with pytest.raises(strategies.StrategyError, match="--tpu"):
    strategies.create_strategy("tpu")
  with pytest.raises(strategies.StrategyError, match="TF_CONFIG"):
    strategies.create_strategy("multi_worker_mirrored")
  with pytest.raises(strategies.StrategyError, match="choose one of"):
    strategies.create_strategy("horovod")
