"""model_config.json: one format beside every checkpoint, enough to rebuild
the weights of any pretraining checkpoint as a weights-only `ElectraModel`."""

import dataclasses
import json

import numpy as np
import pytest
import tensorflow as tf

from official_electra.modeling import model_config
from official_electra.modeling.models import electra_model
from official_electra.modeling.models import electra_pretrainer
from tests.modeling import tiny

_IDS = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}


def _pretraining_config(objective, uniform_generator=False):
  # tiny.pretrainer's shapes: a generator of half the width (Two-Stage's of
  # the discriminator's size, untied).
  return model_config.pretraining_model_config(
      tiny.TINY, objective, 0.5, 1.0, uniform_generator, False, _IDS, True,
      24)


@pytest.mark.parametrize("objective", electra_pretrainer.OBJECTIVES)
def test_the_model_section_rebuilds_every_objectives_checkpoint(objective,
                                                                tmp_path):
  pretrainer = tiny.pretrainer(objective)
  pretrainer(tiny.batch(), training=False)
  prefix = tf.train.Checkpoint(model=pretrainer).write(str(tmp_path / "ckpt"))
  config = _pretraining_config(objective)
  # The heads the config lists are exactly those the pretrainer trains.
  present = {head for head, attribute in model_config.HEAD_ATTRIBUTES.items()
             if getattr(pretrainer, attribute, None) is not None}
  assert set(config.heads) == present
  model = electra_model.ElectraModel.from_config(config).build()
  model.restore(prefix)
  ours = model.parts()
  # Every tower and head the pretrainer holds, and nothing else.
  assert set(ours) == {
      name for name in ("discriminator_network", "generator_network",
                        *model_config.HEAD_ATTRIBUTES.values())
      if getattr(pretrainer, name, None) is not None}
  for name, part in ours.items():
    trained = getattr(pretrainer, name)
    assert len(part.weights) == len(trained.weights) > 0, name
    for restored, original in zip(part.weights, trained.weights):
      np.testing.assert_array_equal(restored.numpy(), original.numpy(),
                                    err_msg=f"{name}: {original.name}")
  # Tied towers share one embedding block, Two-Stage's do not.
  if model.parts().get("generator_network") is not None:
    tied = (model.generator_network.embedding_layer is
            model.discriminator_network.embedding_layer)
    assert tied == (objective != "two_stage")


def test_a_model_without_a_head_the_objective_trains_is_refused():
  model = electra_model.ElectraModel.from_config(
      dataclasses.replace(_pretraining_config("electra"),
                          heads=("generator",)))
  with pytest.raises(ValueError, match="trains the heads"):
    electra_pretrainer.ElectraPretrainer(
        model=model, mask_token_id=tiny.MASK_ID,
        excluded_token_ids=tiny.SPECIAL_IDS, max_predictions_per_seq=4)


def test_round_trip_and_file_format(tmp_path):
  config = _pretraining_config("electra")
  path = model_config.write_model_config(str(tmp_path), config,
                                         {"objective": "electra"})
  values = json.loads((tmp_path / "model_config.json").read_text())
  assert (values["format"], values["version"]) == (model_config.FORMAT, 1)
  assert values["model"]["heads"] == ["discriminator", "generator"]
  recorded = model_config.read_model_config(str(tmp_path / "ckpt-3"))
  assert (recorded.model, recorded.pretraining, recorded.path) == (
      config, {"objective": "electra"}, path)
  assert not list(tmp_path.glob("*.tmp"))


def test_a_folder_without_the_file_records_nothing(tmp_path):
  assert model_config.read_model_config(str(tmp_path)) is None
  with pytest.raises(model_config.ModelConfigError,
                     match="no model_config.json; export needs") as error:
    model_config.require_model_config(str(tmp_path), "export")
  assert "\n" not in str(error.value)


@pytest.mark.parametrize("content, message", [
    ("{not json", "unreadable"),
    (json.dumps({"format": "something else", "version": 1, "model": {}}),
     "format"),
    (json.dumps({"format": model_config.FORMAT, "version": 2, "model": {}}),
     "upgrade"),
    (json.dumps({"format": model_config.FORMAT, "version": 1,
                 "model": {"discriminator": None}}), "needs a discriminator"),
])
def test_a_bad_file_is_one_line_naming_it(content, message, tmp_path):
  (tmp_path / "model_config.json").write_text(content)
  with pytest.raises(model_config.ModelConfigError, match=message) as error:
    model_config.read_model_config(str(tmp_path))
  assert str(tmp_path / "model_config.json") in str(error.value)
  assert "\n" not in str(error.value)
