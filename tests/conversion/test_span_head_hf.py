"""ElectraSpanLabeler <-> Hugging Face ElectraForQuestionAnswering: logits
equal transformers' (where our answer mask is 1: Hugging Face does not mask),
strict errors."""

import json
import os

import numpy as np
import pytest
import safetensors.numpy
import torch
import transformers

from official_electra.conversion import electra_parts
from official_electra.conversion import hf_files
from official_electra.conversion import span_head_hf
from official_electra.modeling import encoder_config
from official_electra.modeling.layers import span_heads
from official_electra.modeling.models import electra_span_labeler
from tests.conversion import hf_reference as ref

# Embedding width 16 != hidden 32: the encoder has an `embeddings_project`.
TINY = ref.TINY


def _batch():
  """Rows `[CLS] question [SEP] context [SEP] [PAD]...` (type 1: context)."""
  batch = ref.padded_batch(TINY.vocab_size)
  types = np.zeros_like(batch["input_type_ids"])
  types[:, 4:] = batch["input_mask"][:, 4:]
  return dict(batch, input_type_ids=types)


def _our_labeler(head_config=span_head_hf.HF_HEAD_CONFIG, seed=0):
  """A tiny labeler with every weight random (LayerNorms and biases too), so
  that a weight left unconverted changes the logits."""
  labeler = electra_span_labeler.ElectraSpanLabeler(
      encoder_config.build_encoder(TINY), head_config)
  labeler(_batch())
  rng = np.random.default_rng(seed)
  for variable in labeler.variables:
    mean = 1.0 if "gamma" in variable.name else 0.0
    variable.assign(rng.normal(mean, 0.05, variable.shape).astype(np.float32))
  return labeler


def _random_hf_model(seed=0):
  config = hf_files.hf_config_from_encoder(TINY, "discriminator")
  config["architectures"] = [span_head_hf.ARCHITECTURE]
  torch.manual_seed(seed)
  model = transformers.ElectraForQuestionAnswering(
      transformers.ElectraConfig(**config))
  with torch.no_grad():
    for name, parameter in model.named_parameters():
      parameter.normal_(1.0 if name.endswith("LayerNorm.weight") else 0.0,
                        0.05)
  return model.eval()


def _hf_logits(model, batch):
  with torch.no_grad():
    outputs = model(
        input_ids=torch.from_numpy(batch["input_word_ids"]).long(),
        attention_mask=torch.from_numpy(batch["input_mask"]).long(),
        token_type_ids=torch.from_numpy(batch["input_type_ids"]).long())
  return {"start_logits": outputs.start_logits.numpy(),
          "end_logits": outputs.end_logits.numpy()}


def _assert_same_logits(ours, theirs, batch):
  mask = span_heads.answer_mask_from(batch["input_mask"],
                                     batch["input_type_ids"]).numpy() == 1
  assert 0 < mask.sum() < mask.size
  for key in ("start_logits", "end_logits"):
    our_logits = np.asarray(ours[key])
    # Not a degenerate comparison: logits vary along the sequence.
    assert theirs[key][mask].std() > 0.01
    np.testing.assert_allclose(our_logits[mask], theirs[key][mask], rtol=0,
                               atol=1e-5, err_msg=key)
    # Elsewhere ours are masked: 1000 below Hugging Face's.
    np.testing.assert_allclose(our_logits[~mask], theirs[key][~mask] - 1000.0,
                               rtol=0, atol=1e-3, err_msg=key)


def test_exported_labeler_gives_our_logits_in_transformers(tmp_path):
  labeler = _our_labeler()
  batch = _batch()
  output_dir = str(tmp_path / "qa")
  span_head_hf.write_hf_question_answering_dir(labeler, output_dir)
  assert sorted(os.listdir(output_dir)) == ["config.json", "model.safetensors"]
  with open(os.path.join(output_dir, "config.json")) as config_file:
    assert json.load(config_file)["architectures"] == [
        "ElectraForQuestionAnswering"]
  hf_model, loading = transformers.ElectraForQuestionAnswering.from_pretrained(
      output_dir, output_loading_info=True)
  assert not loading["missing_keys"] and not loading["unexpected_keys"]
  _assert_same_logits(labeler(batch, training=False),
                      _hf_logits(hf_model.eval(), batch), batch)
  # And back: the same weights.
  reread = span_head_hf.read_hf_question_answering_dir(output_dir)
  for ours, theirs in zip(labeler.variables, reread.variables):
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_imported_transformers_model_gives_its_logits(tmp_path):
  hf_model = _random_hf_model()
  hf_model.save_pretrained(str(tmp_path / "hf"))
  labeler = span_head_hf.read_hf_question_answering_dir(str(tmp_path / "hf"))
  assert isinstance(labeler, electra_span_labeler.ElectraSpanLabeler)
  assert labeler.head_config == span_heads.SpanHeadConfig(
      joint_prediction=False, answerable_classifier=False)
  batch = _batch()
  _assert_same_logits(labeler(batch, training=False),
                      _hf_logits(hf_model, batch), batch)


@pytest.mark.parametrize("head_config,named", [
    (span_heads.SpanHeadConfig(answerable_classifier=False),
     "the joint-prediction head"),
    (span_heads.SpanHeadConfig(joint_prediction=False),
     "the answerability classifier"),
    (span_heads.SpanHeadConfig(), "the joint-prediction head and the "
     "answerability classifier"),
])
def test_heads_hugging_face_cannot_hold_are_refused(tmp_path, head_config,
                                                    named):
  labeler = electra_span_labeler.ElectraSpanLabeler(
      encoder_config.build_encoder(TINY), head_config)
  with pytest.raises(electra_parts.ConversionError,
                     match=f"has {named}, which") as raised:
    span_head_hf.write_hf_question_answering_dir(labeler,
                                                 str(tmp_path / "qa"))
  assert "\n" not in str(raised.value)
  assert not os.path.exists(tmp_path / "qa")


def test_a_taken_output_folder_is_refused(tmp_path):
  (tmp_path / "qa").mkdir()
  (tmp_path / "qa" / "notes.txt").write_text("mine")
  with pytest.raises(electra_parts.ConversionError, match="already exists"):
    span_head_hf.write_hf_question_answering_dir(_our_labeler(),
                                                 str(tmp_path / "qa"))
  assert os.listdir(tmp_path / "qa") == ["notes.txt"]


def test_a_pretraining_export_is_not_a_question_answering_folder(tmp_path):
  discriminator, _ = ref.random_hf_models(TINY, ref.TINY_GENERATOR)
  discriminator.save_pretrained(str(tmp_path / "d"))
  with pytest.raises(electra_parts.ConversionError,
                     match="architectures is .*ElectraForPreTraining.*, not "
                     r"\['ElectraForQuestionAnswering'\]") as raised:
    span_head_hf.read_hf_question_answering_dir(str(tmp_path / "d"))
  assert "\n" not in str(raised.value)


def test_weights_that_do_not_fit_the_config_are_refused(tmp_path):
  hf_dir = tmp_path / "hf"
  _random_hf_model().save_pretrained(str(hf_dir))
  weights_file = str(hf_dir / "model.safetensors")
  state = safetensors.numpy.load_file(weights_file)
  state["qa_outputs.weight"] = np.zeros((3, TINY.hidden_size), np.float32)
  del state["electra.encoder.layer.1.output.dense.bias"]
  safetensors.numpy.save_file(state, weights_file, metadata={"format": "pt"})
  with pytest.raises(electra_parts.ConversionError) as raised:
    span_head_hf.read_hf_question_answering_dir(str(hf_dir))
  first_line, *details = str(raised.value).splitlines()
  assert first_line == (f"{hf_dir} is not the ElectraForQuestionAnswering its "
                        "config.json describes; pass an "
                        "ElectraForQuestionAnswering folder saved with "
                        "save_pretrained:")
  assert details == [
      "  missing 1: electra.encoder.layer.1.output.dense.bias",
      "  shape mismatch (source vs model) 1: qa_outputs.weight (3, 32) vs "
      "(2, 32)"]
