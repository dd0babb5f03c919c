"""`python -m official_electra.convert` for fine-tuned SQuAD models: a seed
folder with the independent head -> Hugging Face ElectraForQuestionAnswering
(transformers gives our logits) -> a seed folder again (the same weights,
read by load_span_labeler and by fine-tuning); heads Hugging Face cannot
hold are refused with nothing written."""

import dataclasses
import json
import os
import subprocess
import sys
import types

import numpy as np
import pytest
import transformers

from official_electra import convert
from official_electra.conversion import converters
from official_electra.conversion import electra_parts
from official_electra.finetuning import squad_family
from official_electra.modeling import checkpoints
from official_electra.modeling import encoder_config
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config
from official_electra.modeling import pretrained
from official_electra.modeling import span_labeler_checkpoint
from tests.conversion import test_span_head_hf
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler
from official_electra.tokenization import wordpiece_tokenizer
from tests.conversion import hf_reference as ref

_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
TINY = ref.TINY  # max_position_embeddings 32: the import packs to 32.
_INDEPENDENT = squad_family.SquadSettings(joint_prediction=False,
                                          answerable_classifier=False)
_FLAGS = ("hf_dir", "hf_generator_dir", "hf_qa_dir", "task", "tf1_checkpoint",
          "model_size", "discriminator_config_json", "generator_config_json",
          "output_dir", "vocab_file", "lower_case", "checkpoint",
          "finetuned_dir", "hf_output_dir", "hf_generator_output_dir",
          "tf1_output_prefix")


def _flags(**values):
  return types.SimpleNamespace(**{name: values.get(name) for name in _FLAGS})


def _batch():
  """Rows `[CLS] question [SEP] context [SEP] [PAD]...` (type 1: context)."""
  batch = ref.padded_batch(TINY.vocab_size)
  types_ = np.zeros_like(batch["input_type_ids"])
  types_[:, 4:] = batch["input_mask"][:, 4:]
  return dict(batch, input_type_ids=types_)


def _write_vocab(path):
  path.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [
      f"word{index}" for index in range(TINY.vocab_size - 5)]) + "\n")
  return str(path)


def _write_seed_folder(run_dir, vocab_file, settings=_INDEPENDENT, seed=0):
  """A tiny SQuAD seed folder as the trainer writes it, every weight random
  (LayerNorms and biases too, so a weight left unconverted shows)."""
  labeler = electra_span_labeler.ElectraSpanLabeler(
      encoder_config.build_encoder(TINY), settings.head_config())
  labeler(_batch(), training=False)
  rng = np.random.default_rng(seed)
  for variable in labeler.variables:
    mean = 1.0 if "gamma" in variable.name else 0.0
    variable.assign(rng.normal(mean, 0.05, variable.shape).astype(np.float32))
  family = squad_family.SquadFamily("SQuAD-1.1", None, None, settings, None)
  finetuned_checkpoint.save_finetuned(
      labeler, str(run_dir),
      wordpiece_tokenizer.WordpieceTokenizer(vocab_file, lower_case=True),
      max_seq_length=TINY.max_position_embeddings,
      description=family.describe(labeler, None))
  return labeler


@pytest.fixture(scope="module")
def finetuned(tmp_path_factory):
  """`(model_dir, seed folder, vocab file, labeler)`: a fine-tuning
  model_dir whose SQuAD-1.1 task folder selects seed 0."""
  root = tmp_path_factory.mktemp("finetuned")
  vocab_file = _write_vocab(root / "vocab.txt")
  task_dir = root / "model" / "SQuAD-1.1"
  labeler = _write_seed_folder(task_dir / "seed_0", vocab_file)
  (task_dir / "eval_results.json").write_text('{"selected_seed": 0}')
  return root / "model", task_dir / "seed_0", vocab_file, labeler


def _assert_equal_weights(ours, theirs):
  assert len(ours.variables) == len(theirs.variables)
  for our_variable, their_variable in zip(ours.variables, theirs.variables):
    assert our_variable.shape == their_variable.shape
    np.testing.assert_array_equal(our_variable.numpy(), their_variable.numpy(),
                                  err_msg=our_variable.name)


def test_round_trip_through_transformers(finetuned, tmp_path):
  model_dir, seed_dir, vocab_file, labeler = finetuned
  # The model_dir resolves to its task's selected seed, as for the export.
  hf_dir = str(tmp_path / "hf")
  assert converters.export_hf_question_answering(
      str(model_dir), hf_dir) == str(seed_dir)
  assert sorted(os.listdir(hf_dir)) == ["config.json", "model.safetensors"]
  hf_model, loading = transformers.ElectraForQuestionAnswering.from_pretrained(
      hf_dir, output_loading_info=True)
  assert not loading["missing_keys"] and not loading["unexpected_keys"]
  batch = _batch()
  ours = labeler(batch, training=False)
  theirs = test_span_head_hf._hf_logits(hf_model.eval(), batch)
  mask = span_heads.answer_mask_from(batch["input_mask"],
                                     batch["input_type_ids"]).numpy() == 1
  assert 0 < mask.sum() < mask.size
  for key in ("start_logits", "end_logits"):
    assert theirs[key][mask].std() > 0.01  # Logits vary: not degenerate.
    np.testing.assert_allclose(np.asarray(ours[key])[mask], theirs[key][mask],
                               rtol=0, atol=1e-5, err_msg=key)

  # And back: a seed folder with the same weights and the description the
  # trainer writes.
  output_dir = str(tmp_path / "imported")
  assert converters.import_hf_question_answering(
      hf_dir, output_dir, vocab_file=vocab_file,
      task_name="SQuAD-2.0") == output_dir
  assert not [name for name in os.listdir(tmp_path) if name.startswith(".")]
  reread, description = span_labeler_checkpoint.load_span_labeler(output_dir)
  _assert_equal_weights(labeler, reread)
  assert {key: description[key] for key in
          ("family", "task", "version", "head", "settings",
           "max_seq_length")} == {
               "family": "span_extraction", "task": "SQuAD-2.0",
               "version": "2.0",
               "head": span_heads.SpanHeadConfig(
                   joint_prediction=False,
                   answerable_classifier=False).to_dict(),
               "settings": dataclasses.asdict(_INDEPENDENT),
               "max_seq_length": TINY.max_position_embeddings}
  recorded = model_config.read_model_config(output_dir).model
  assert recorded.discriminator == TINY
  assert recorded.lower_case is True
  assert recorded.special_token_ids["[MASK]"] == 4
  with open(vocab_file) as original, open(
      os.path.join(output_dir, "vocab.txt")) as copied:
    assert copied.read() == original.read()
  # `finetune --init_checkpoint=<import>`: its encoder at classifier/encoder.
  prefix = checkpoints.resolve_checkpoint(output_dir)
  assert checkpoints.is_finetuned_checkpoint(prefix)
  encoder = pretrained.load_encoder(output_dir)
  for ours, theirs in zip(labeler.encoder.variables, encoder.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_command_line_both_ways(finetuned, tmp_path):
  _, seed_dir, vocab_file, labeler = finetuned
  hf_dir = tmp_path / "hf"
  summary = convert.run(_flags(finetuned_dir=str(seed_dir),
                               hf_output_dir=str(hf_dir)))
  assert summary == (f"wrote {hf_dir} (ElectraForQuestionAnswering of "
                     f"{seed_dir})")
  # A released folder carries its tokenizer: vocab.txt and the case.
  (hf_dir / "vocab.txt").write_text(open(vocab_file).read())
  (hf_dir / "tokenizer_config.json").write_text('{"do_lower_case": false}')
  summary = convert.run(_flags(hf_qa_dir=str(hf_dir),
                               output_dir=str(tmp_path / "imported")))
  assert summary.startswith(f"wrote {tmp_path / 'imported'} (SQuAD-1.1 seed "
                            "folder")
  reread, description = span_labeler_checkpoint.load_span_labeler(
      str(tmp_path / "imported"))
  _assert_equal_weights(labeler, reread)
  assert (description["task"], description["lower_case"]) == ("SQuAD-1.1",
                                                              False)


def test_command_line_import_in_a_fresh_process(finetuned, tmp_path):
  _, seed_dir, vocab_file, labeler = finetuned
  converters.export_hf_question_answering(str(seed_dir), str(tmp_path / "hf"))
  output_dir = tmp_path / "imported"
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.convert",
       f"--hf_qa_dir={tmp_path / 'hf'}", f"--output_dir={output_dir}",
       f"--vocab_file={vocab_file}", "--task=SQuAD-2.0"],
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert completed.returncode == 0, completed.stderr
  assert completed.stdout.startswith(f"wrote {output_dir} (SQuAD-2.0 seed "
                                     "folder")
  reread, description = span_labeler_checkpoint.load_span_labeler(
      str(output_dir))
  _assert_equal_weights(labeler, reread)
  assert description["version"] == "2.0"


@pytest.mark.parametrize("settings,named", [
    (dataclasses.replace(_INDEPENDENT, joint_prediction=True),
     "the joint-prediction head"),
    (dataclasses.replace(_INDEPENDENT, answerable_classifier=True),
     "the answerability classifier"),
])
def test_heads_hugging_face_cannot_hold_are_refused(tmp_path, settings,
                                                    named):
  seed_dir = tmp_path / "seed_0"
  _write_seed_folder(seed_dir, _write_vocab(tmp_path / "vocab.txt"), settings)
  with pytest.raises(electra_parts.ConversionError) as raised:
    converters.export_hf_question_answering(str(seed_dir),
                                            str(tmp_path / "hf"))
  assert str(raised.value) == (
      f"{seed_dir}: fine-tuned with {named}, which Hugging Face's "
      "ElectraForQuestionAnswering cannot hold; only a model fine-tuned with "
      "squad_task.joint_prediction = False and "
      "squad_task.answerable_classifier = False converts")
  assert sorted(os.listdir(tmp_path)) == ["seed_0", "vocab.txt"]


def test_joint_head_refusal_is_one_line_on_the_command_line(tmp_path):
  seed_dir = tmp_path / "seed_0"
  _write_seed_folder(seed_dir, _write_vocab(tmp_path / "vocab.txt"),
                     squad_family.SquadSettings(answerable_classifier=False))
  completed = subprocess.run(
      [sys.executable, "-m", "official_electra.convert",
       f"--finetuned_dir={seed_dir}", f"--hf_output_dir={tmp_path / 'hf'}"],
      cwd=_REPO_ROOT, capture_output=True, text=True,
      env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert completed.returncode == 1
  assert [line for line in completed.stderr.splitlines()
          if line.startswith("error: ")] == [
              f"error: {seed_dir}: fine-tuned with the joint-prediction head, "
              "which Hugging Face's ElectraForQuestionAnswering cannot hold; "
              "only a model fine-tuned with squad_task.joint_prediction = "
              "False and squad_task.answerable_classifier = False converts"]
  assert "Traceback" not in completed.stderr
  assert sorted(os.listdir(tmp_path)) == ["seed_0", "vocab.txt"]


def test_an_import_without_vocabulary_is_refused(finetuned, tmp_path):
  _, seed_dir, _, _ = finetuned
  converters.export_hf_question_answering(str(seed_dir), str(tmp_path / "hf"))
  with pytest.raises(electra_parts.ConversionError,
                     match="has no vocab.txt, .*pass --vocab_file=vocab.txt"):
    converters.import_hf_question_answering(str(tmp_path / "hf"),
                                            str(tmp_path / "out"))
  assert sorted(os.listdir(tmp_path)) == ["hf"]


def test_a_classifier_seed_folder_is_not_exported(tmp_path, finetuned):
  # The seed folder of another family: its description says so.
  _, seed_dir, _, _ = finetuned
  other = tmp_path / "seed_0"
  other.mkdir()
  config = json.loads((seed_dir / "model_config.json").read_text())
  config["finetuned"]["family"] = "classification"
  (other / "model_config.json").write_text(json.dumps(config))
  with pytest.raises(finetuned_checkpoint.FinetunedCheckpointError,
                     match="not a span extraction"):
    converters.export_hf_question_answering(str(other), str(tmp_path / "hf"))
  assert not (tmp_path / "hf").exists()


@pytest.mark.parametrize("values,message", [
    ({"hf_qa_dir": "x", "checkpoint": "y"}, "pass exactly one source"),
    ({"finetuned_dir": "x", "hf_dir": "y"}, "pass exactly one source"),
    ({"hf_qa_dir": "x"}, "an import needs --output_dir"),
    ({"hf_qa_dir": "x", "output_dir": "y", "model_size": "small"},
     "--hf_qa_dir imports to --output_dir only .*; drop --model_size"),
    ({"finetuned_dir": "x"}, "an export of --finetuned_dir needs "
     "--hf_output_dir"),
    ({"finetuned_dir": "x", "hf_output_dir": "y", "tf1_output_prefix": "z"},
     "--finetuned_dir exports to --hf_output_dir only"),
    ({"finetuned_dir": "x", "hf_output_dir": "y", "output_dir": "z"},
     "drop --output_dir"),
    ({"checkpoint": "x", "hf_output_dir": "y", "task": "SQuAD-2.0"},
     "--task names the SQuAD version of an --hf_qa_dir import"),
])
def test_flag_combinations_are_checked(values, message):
  with pytest.raises(electra_parts.ConversionError, match=message) as raised:
    convert.run(_flags(**values))
  assert "\n" not in str(raised.value)


def test_an_absent_folder_is_named(tmp_path):
  with pytest.raises(electra_parts.ConversionError,
                     match="hf/config.json: no such file; pass a Hugging Face "
                     "model directory"):
    converters.import_hf_question_answering(str(tmp_path / "hf"),
                                            str(tmp_path / "out"))
  assert not (tmp_path / "out").exists()


def test_an_unknown_task_is_refused(tmp_path):
  with pytest.raises(electra_parts.ConversionError,
                     match="unknown SQuAD task 'SQuAD-3'; pass "
                     "--task=SQuAD-1.1 or --task=SQuAD-2.0"):
    converters.import_hf_question_answering(str(tmp_path / "hf"),
                                            str(tmp_path / "out"),
                                            task_name="SQuAD-3")
  assert not (tmp_path / "out").exists()
