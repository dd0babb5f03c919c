"""Settings of the wrong type or outside their range, and output paths that
cannot be folders: one `error:` line naming the setting and the fix, before
anything is written. The rules in process (`settings_check`,
`run_pretraining`), then through the programs as users run them."""

import pytest
import tensorflow as tf

from official_electra import settings_check
from official_electra.modeling import encoder_config
from official_electra.training import pretraining_run
from official_electra.training import pretraining_settings
from tests.reliability import cli


# The rules.


@pytest.mark.parametrize("rule, accepted, refused", [
    (settings_check.POSITIVE_INTEGER, [1, 7], [0, -1, 1.0, "3", True, None]),
    (settings_check.NON_NEGATIVE_INTEGER, [0, 5], [-1, 0.5, False]),
    (settings_check.POSITIVE_NUMBER, [1e-9, 3, 2.5], [0, -1e-3, float("nan"),
                                                      float("inf"), "1", True]),
    (settings_check.RATE, [0, 0.0, 0.5], [1, 1.0, -0.1, None]),
    (settings_check.FRACTION, [1, 1.0, 0.25], [0, 0.0, 1.5, -1]),
    (settings_check.BOOLEAN, [True, False], [0, 1, "True", None]),
    (settings_check.optional(settings_check.POSITIVE_INTEGER), [None, 3],
     [0, "x"]),
    (settings_check.one_of("adamw", "lamb"), ["adamw", "lamb"], ["adam", None]),
])
def test_rules_accept_and_refuse(rule, accepted, refused):
  for value in accepted:
    assert rule.accepts(value), (rule.description, value)
  for value in refused:
    assert not rule.accepts(value), (rule.description, value)


def test_rule_descriptions():
  assert settings_check.FRACTION.description == "a number in (0, 1]"
  assert settings_check.RATE.description == "a number in [0, 1)"
  assert settings_check.integer(5).description == "an integer >= 5"
  assert (settings_check.optional(settings_check.POSITIVE_INTEGER).description
          == "None or an integer >= 1")


def test_output_dir(tmp_path):
  a_file = tmp_path / "a_file"
  a_file.write_text("")
  settings_check.check_output_dir(str(tmp_path), "--model_dir")
  settings_check.check_output_dir(str(tmp_path / "new" / "deeper"),
                                  "--model_dir")
  settings_check.check_output_dir("gs://bucket/run", "--model_dir")
  with pytest.raises(settings_check.SettingError,
                     match=f"--model_dir={a_file} is a file, not a folder"):
    settings_check.check_output_dir(str(a_file), "--model_dir")
  with pytest.raises(settings_check.SettingError, match=(
      f"--model_dir={a_file / 'run'} cannot be created: {a_file} is a file")):
    settings_check.check_output_dir(str(a_file / "run"), "--model_dir")
  with pytest.raises(settings_check.SettingError, match="must be a folder"):
    settings_check.check_output_dir("", "--model_dir")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["a_file"]


# run_pretraining: one case per class of setting.

_ENCODER = encoder_config.EncoderConfig(
    vocab_size=100, embedding_size=16, hidden_size=16, num_layers=1,
    num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)


@pytest.mark.parametrize("overrides, message", [
    ({"num_train_steps": 0}, "run_pretraining.num_train_steps = 0 must be an "
                             "integer >= 1"),
    ({"train_batch_size": "64"}, "run_pretraining.train_batch_size = '64' must "
                                 "be an integer >= 1"),
    ({"max_seq_length": 64}, "run_pretraining.max_seq_length = 64 is above "
                             "encoder.max_position_embeddings = 32"),
    ({"mask_prob": 1.5}, r"run_pretraining.mask_prob = 1.5 must be a number "
                         r"in \(0, 1\]"),
    ({"generator_hidden_fraction": 0}, "generator_hidden_fraction = 0 must "
                                       "be"),
    ({"learning_rate": -1e-3}, "learning_rate = -0.001 must be a number >= "
                               "0"),
    ({"num_warmup_steps": -5}, "num_warmup_steps = -5 must be an integer >= 0"),
    ({"weight_decay_rate": 1.0}, r"weight_decay_rate = 1.0 must be a number in "
                                 r"\[0, 1\)"),
    ({"discriminator_loss_weight": float("nan")}, "discriminator_loss_weight "
                                                  "= nan must be"),
    ({"optimizer": "adam"}, "optimizer = 'adam' must be one of 'adamw', "
                            "'lamb'"),
    ({"objective": "bert"}, "objective = 'bert' must be one of 'electra'"),
    ({"stop_after_steps": 0}, "stop_after_steps = 0 must be None or an "
                              "integer >= 1"),
    ({"disallow_correct": "yes"}, "disallow_correct = 'yes' must be True or "
                                  "False"),
    ({"encoder": encoder_config.EncoderConfig(hidden_size=100,
                                              num_attention_heads=3)},
     "encoder.hidden_size = 100 is not a multiple of "
     "encoder.num_attention_heads = 3"),
    ({"encoder": encoder_config.EncoderConfig(dropout_rate=1.0)},
     r"encoder.dropout_rate = 1.0 must be a number in \[0, 1\)"),
])
def test_run_pretraining_refuses_before_any_work(tmp_path, overrides,
                                                 message):
  arguments = dict(
      model_dir=str(tmp_path / "run"), train_data=str(tmp_path / "no_data"),
      vocab_file=str(tmp_path / "no_vocab.txt"), encoder=_ENCODER,
      strategy=tf.distribute.get_strategy(), num_train_steps=10,
      max_seq_length=32)
  arguments.update(overrides)
  with pytest.raises(settings_check.SettingError, match=message):
    pretraining_run.run_pretraining(**arguments)
  assert list(tmp_path.iterdir()) == []


def test_run_pretraining_refuses_a_model_dir_that_is_a_file(tmp_path):
  (tmp_path / "a_file").write_text("")
  with pytest.raises(settings_check.SettingError,
                     match="--model_dir=.*a_file is a file, not a folder"):
    pretraining_run.run_pretraining(
        str(tmp_path / "a_file"), str(tmp_path / "no_data"),
        str(tmp_path / "no_vocab.txt"), _ENCODER,
        tf.distribute.get_strategy(), 10, max_seq_length=32)


def test_every_run_pretraining_setting_has_a_rule():
  import inspect  # pylint: disable=import-outside-toplevel
  parameters = set(inspect.signature(pretraining_run.run_pretraining)
                   .parameters)
  # Checked otherwise: paths and objects, and masking_draws (its own error).
  others = {"model_dir", "train_data", "vocab_file", "encoder", "strategy",
            "init_checkpoint", "mixed_precision", "write_config",
            "masking_draws"}
  assert parameters - others == set(pretraining_settings.SETTING_RULES)


# The programs.


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
  root = tmp_path_factory.mktemp("setting_faults")
  a_file = root / "a_file"
  a_file.write_text("")
  vocab = root / "vocab.txt"
  vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                              "a", "b"]) + "\n")
  return root, cli.run_all({
      "train_binding": (
          "official_electra.train", "--gin_file=gin/tiny.gin",
          "--gin_bindings=run_pretraining.mask_prob=1.5",
          f"--train_data={root}", f"--vocab_file={vocab}",
          f"--model_dir={root / 'run'}", "--strategy=one_device"),
      "train_model_dir": (
          "official_electra.train", "--gin_file=gin/tiny.gin",
          f"--train_data={root}", f"--vocab_file={vocab}",
          f"--model_dir={a_file / 'run'}", "--strategy=one_device"),
      "finetune_binding": (
          "official_electra.finetune", "--task=SST-2", f"--glue_dir={root}",
          f"--model_dir={root / 'glue'}", "--gin_file=gin/glue/small.gin",
          "--gin_bindings=glue_hyperparameters.warmup_proportion=2.0",
          f"--vocab_file={vocab}"),
      "export_dir": (
          "official_electra.export", f"--model_dir={root}",
          f"--export_dir={a_file / 'export'}"),
      "convert_output_dir": (
          "official_electra.convert", f"--hf_dir={root}",
          f"--output_dir={a_file / 'imported'}"),
  })


@pytest.mark.slow
def test_train_binding_out_of_range(runs):
  root, results = runs
  cli.assert_error(results["train_binding"].result(),
                   "run_pretraining.mask_prob = 1.5 must be a number in (0, 1]",
                   "fix the binding or flag")
  assert not (root / "run").exists()


@pytest.mark.slow
def test_train_model_dir_under_a_file(runs):
  root, results = runs
  cli.assert_error(results["train_model_dir"].result(),
                   f"--model_dir={root / 'a_file' / 'run'} cannot be created",
                   "is a file")


@pytest.mark.slow
def test_finetune_binding_out_of_range(runs):
  root, results = runs
  cli.assert_error(results["finetune_binding"].result(),
                   "glue_hyperparameters.warmup_proportion = 2.0 must be a "
                   "number in [0, 1)", "fix the binding")
  assert not (root / "glue").exists()


@pytest.mark.slow
def test_export_dir_under_a_file(runs):
  root, results = runs
  cli.assert_error(results["export_dir"].result(),
                   f"--export_dir={root / 'a_file' / 'export'} cannot be "
                   "created", "is a file")


@pytest.mark.slow
def test_convert_output_dir_under_a_file(runs):
  root, results = runs
  cli.assert_error(results["convert_output_dir"].result(),
                   f"--output_dir={root / 'a_file' / 'imported'} cannot be "
                   "created", "is a file")
