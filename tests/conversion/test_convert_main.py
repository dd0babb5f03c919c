"""The `python -m official_electra.convert` entry point."""

import os
import subprocess
import sys
import types

import pytest

from official_electra import convert
from official_electra.conversion import electra_parts
from official_electra.modeling import model_config
from tests.conversion import hf_reference as ref

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
_FLAGS = ("hf_dir", "hf_generator_dir", "tf1_checkpoint", "model_size",
          "discriminator_config_json", "generator_config_json", "output_dir",
          "vocab_file", "checkpoint", "hf_output_dir",
          "hf_generator_output_dir", "tf1_output_prefix")


def _flags(**values):
  return types.SimpleNamespace(**{
      name: values.get(name) for name in _FLAGS + ("lower_case",)})


def test_every_direction_through_run(tmp_path):
  discriminator, generator = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(tmp_path / "hf_d")
  generator.save_pretrained(tmp_path / "hf_g")
  summary = convert.run(_flags(hf_dir=str(tmp_path / "hf_d"),
                               hf_generator_dir=str(tmp_path / "hf_g"),
                               output_dir=str(tmp_path / "ours")))
  assert summary == (f"wrote {tmp_path / 'ours' / 'ckpt-0'} "
                     "(discriminator and generator; architecture in "
                     "model_config.json)")
  convert.run(_flags(checkpoint=str(tmp_path / "ours"),
                     hf_output_dir=str(tmp_path / "out_d"),
                     tf1_output_prefix=str(tmp_path / "tf1" / "model")))
  assert sorted(os.listdir(tmp_path / "out_d")) == ["config.json",
                                                    "model.safetensors"]
  (tmp_path / "disc.json").write_text(ref.TINY.to_json())
  (tmp_path / "gen.json").write_text(ref.TINY_GENERATOR.to_json())
  summary = convert.run(_flags(
      tf1_checkpoint=str(tmp_path / "tf1" / "model"),
      discriminator_config_json=str(tmp_path / "disc.json"),
      generator_config_json=str(tmp_path / "gen.json"),
      output_dir=str(tmp_path / "from_tf1")))
  assert summary.endswith("(discriminator and generator; architecture in "
                          "model_config.json)")


def test_export_checks_every_output_before_writing(tmp_path):
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(tmp_path / "hf_d")
  convert.run(_flags(hf_dir=str(tmp_path / "hf_d"),
                     output_dir=str(tmp_path / "ours")))
  (tmp_path / "tf1.index").write_text("taken")
  with pytest.raises(electra_parts.ConversionError, match="already exists"):
    convert.run(_flags(checkpoint=str(tmp_path / "ours"),
                       hf_output_dir=str(tmp_path / "out_d"),
                       tf1_output_prefix=str(tmp_path / "tf1")))
  assert not (tmp_path / "out_d").exists()


def test_an_hf_import_takes_the_folders_vocabulary_and_casing(tmp_path):
  # A released Hugging Face folder carries vocab.txt and tokenizer_config.json.
  discriminator, _ = ref.random_hf_models(ref.TINY, ref.TINY_GENERATOR)
  hf_dir = tmp_path / "hf_d"
  discriminator.save_pretrained(hf_dir)
  tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
      f"Word{i}" for i in range(ref.TINY.vocab_size - 5)]
  (hf_dir / "vocab.txt").write_text("\n".join(tokens) + "\n")
  (hf_dir / "tokenizer_config.json").write_text('{"do_lower_case": false}')
  convert.run(_flags(hf_dir=str(hf_dir), output_dir=str(tmp_path / "cased")))
  assert ((tmp_path / "cased" / "vocab.txt").read_text() ==
          (hf_dir / "vocab.txt").read_text())
  recorded = model_config.read_model_config(str(tmp_path / "cased")).model
  assert recorded.lower_case is False
  assert recorded.special_token_ids["[MASK]"] == 4  # The folder's, not BERT's.

  # Flags still win over the folder's files.
  (tmp_path / "other_vocab.txt").write_text("\n".join(tokens[::-1]) + "\n")
  convert.run(_flags(hf_dir=str(hf_dir), output_dir=str(tmp_path / "flags"),
                     vocab_file=str(tmp_path / "other_vocab.txt"),
                     lower_case=True))
  recorded = model_config.read_model_config(str(tmp_path / "flags")).model
  assert recorded.lower_case is True
  assert recorded.special_token_ids["[MASK]"] == ref.TINY.vocab_size - 5


@pytest.mark.parametrize("values,message", [
    ({}, "pass exactly one source"),
    ({"checkpoint": "x", "tf1_checkpoint": "y"}, "pass exactly one source"),
    ({"hf_dir": "x"}, "an import needs --output_dir"),
    ({"checkpoint": "x"}, "an export needs"),
    ({"tf1_checkpoint": "x", "output_dir": "y"}, "needs its architecture"),
])
def test_flag_combinations_are_checked(values, message):
  with pytest.raises(electra_parts.ConversionError, match=message):
    convert.run(_flags(**values))


def test_command_line_error_is_one_line_without_traceback(tmp_path):
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.convert",
       f"--hf_dir={tmp_path / 'absent'}", f"--output_dir={tmp_path / 'out'}"],
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert completed.returncode == 1
  error_lines = [line for line in completed.stderr.splitlines()
                 if line.startswith("error: ")]
  assert error_lines == [
      f"error: {tmp_path / 'absent' / 'config.json'}: no such file; pass a "
      "Hugging Face model directory (config.json with model.safetensors or "
      "pytorch_model.bin)"]
  assert "Traceback" not in completed.stderr
  assert not (tmp_path / "out").exists()
