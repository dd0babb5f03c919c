"""The conversions `official_electra.convert` offers, as library calls.

Pretraining checkpoints: imports (Hugging Face, TF1) write a checkpoint
directory in the project's layout (see `electra_parts.py`) that
`official_electra.train --init_checkpoint` and `official_electra.finetune
--init_checkpoint` read; exports read one.

Fine-tuned SQuAD models with the independent head and no answerability
classifier (`span_head_hf.py`): `export_hf_question_answering` writes a seed
folder as a Hugging Face `ElectraForQuestionAnswering`;
`import_hf_question_answering` writes one as a seed folder
(`modeling/finetuned_checkpoint.py`), which `load_span_labeler`, the
SavedModel export and `official_electra.finetune --init_checkpoint` read.
"""

import dataclasses

import numpy as np

from official_electra import files
from official_electra.conversion import checkpoint_dir
from official_electra.conversion import electra_parts
from official_electra.conversion import hf_files
from official_electra.conversion import span_head_hf
from official_electra.conversion import tf1_files
from official_electra.conversion import tf1_names
from official_electra.modeling import encoder_config as encoder_config_lib
from official_electra.modeling import finetuned_checkpoint
from official_electra.modeling import model_config as model_config_lib
from official_electra.modeling import span_labeler_checkpoint
from official_electra.serving import finetuned_runs
from official_electra.tokenization import wordpiece_tokenizer

_SMALL = encoder_config_lib.EncoderConfig()
# The paper's discriminator sizes and generator fractions (Table 6;
# ELECTRA_REFERENCE.md §4); the released checkpoints are the "++" versions:
# Small++ has a full-size generator, Base++ and Large++ the fractions below.
MODEL_SIZES = {
    "small": (_SMALL, 0.25),
    "small_plus_plus": (_SMALL, 1.0),
    "base": (dataclasses.replace(
        _SMALL, embedding_size=768, hidden_size=768, num_attention_heads=12,
        intermediate_size=3072), 1 / 3),
    "large": (dataclasses.replace(
        _SMALL, embedding_size=1024, hidden_size=1024, num_layers=24,
        num_attention_heads=16, intermediate_size=4096), 0.25),
}


def model_size_configs(model_size):
  """`(discriminator_config, generator_config)` of a named model size."""
  if model_size not in MODEL_SIZES:
    raise electra_parts.ConversionError(
        f"unknown model size {model_size!r}; choose one of "
        f"{', '.join(MODEL_SIZES)} or pass the config JSON files")
  discriminator_config, generator_fraction = MODEL_SIZES[model_size]
  return discriminator_config, discriminator_config.scaled(generator_fraction)


def import_hf(hf_dir, hf_generator_dir, output_dir, vocab_file=None,
              lower_case=None):
  """Hugging Face `ElectraForPreTraining` and/or `ElectraForMaskedLM` -> ours.

  With both, the two files' embedding blocks must be equal (ELECTRA shares
  them); with one, the checkpoint holds that tower only.

  Args:
    hf_dir: the discriminator's directory, or None.
    hf_generator_dir: the generator's directory, or None.
    output_dir: the new checkpoint directory.
    vocab_file: the model's vocabulary; None takes the `vocab.txt` of the
      first directory that has one (released models do), else none.
    lower_case: whether the vocabulary is uncased; None takes `do_lower_case`
      of the first directory's `tokenizer_config.json` that sets it, else
      True.

  Returns:
    The checkpoint prefix written.
  """
  towers = {tower: path for tower, path in (("discriminator", hf_dir),
                                            ("generator", hf_generator_dir))
            if path}
  if not towers:
    raise electra_parts.ConversionError(
        "pass a Hugging Face discriminator and/or generator directory")
  electra_parts.check_new_output(output_dir)
  sources = {tower: hf_files.read_hf_dir(path)
             for tower, path in towers.items()}
  tokenizers = [hf_files.read_tokenizer_files(path)
                for path in towers.values()]
  if vocab_file is None:
    vocab_file = next((vocab for vocab, _ in tokenizers if vocab), None)
  if lower_case is None:
    lower_case = next((case for _, case in tokenizers if case is not None),
                      True)
  configs = {tower: hf_files.encoder_config_from_hf(
      hf_config, f"{towers[tower]}/{hf_files.CONFIG_FILE}")
             for tower, (hf_config, _) in sources.items()}
  special_token_ids = electra_parts.special_token_ids_from(
      vocab_file, next(iter(configs.values())).vocab_size)
  model = electra_parts.build_model(
      configs.get("discriminator"), configs.get("generator"))
  weights = {}
  for tower, (_, state) in sources.items():
    names = [slot.name for slot in tf1_names.tower_slots(model, tower)]
    tower_weights = hf_files.hf_state_to_tf1(state, names, tower, towers[tower])
    _merge_shared(weights, tower_weights, towers)
  tf1_names.assign_weights(model, weights, " and ".join(towers.values()))
  return checkpoint_dir.write_checkpoint_dir(
      model, output_dir, special_token_ids, vocab_file, lower_case)


def _merge_shared(weights, tower_weights, towers):
  differing = sorted(
      name for name, value in tower_weights.items()
      if name in weights and not np.array_equal(weights[name], value))
  if differing:
    raise electra_parts.ConversionError(
        f"{' and '.join(towers.values())} have different embeddings "
        f"({', '.join(differing)}); ELECTRA shares one embedding block "
        "between generator and discriminator, so these are not the two halves "
        "of one model: import the discriminator alone (--hf_dir only)")
  weights.update(tower_weights)


def import_tf1(tf1_checkpoint, discriminator_config, generator_config,
               output_dir, vocab_file=None, lower_case=True):
  """An original TF1 ELECTRA checkpoint -> ours.

  The generator is imported when the checkpoint has one (`generator/...`
  names); `generator_config` is then required.

  Returns:
    The checkpoint prefix written.
  """
  electra_parts.check_new_output(output_dir)
  weights = tf1_files.read_tf1_checkpoint(tf1_checkpoint)
  has_generator = any(name.startswith(("generator/", "generator_predictions/"))
                      for name in weights)
  has_discriminator = any(name.startswith(("electra/encoder/",
                                           "discriminator_predictions/"))
                          for name in weights)
  if not has_generator and not has_discriminator:
    raise electra_parts.ConversionError(
        f"{tf1_checkpoint} holds no ELECTRA encoder (no electra/encoder/... or "
        "generator/... names); pass an ELECTRA pretraining checkpoint")
  if has_generator and generator_config is None:
    raise electra_parts.ConversionError(
        f"{tf1_checkpoint} holds a generator: pass its config "
        "(--model_size or --generator_config_json)")
  special_token_ids = electra_parts.special_token_ids_from(
      vocab_file, (discriminator_config or generator_config).vocab_size)
  model = electra_parts.build_model(
      discriminator_config if has_discriminator else None,
      generator_config if has_generator else None)
  tf1_names.assign_weights(model, weights, tf1_checkpoint)
  return checkpoint_dir.write_checkpoint_dir(
      model, output_dir, special_token_ids, vocab_file, lower_case)


def export_hf(checkpoint, hf_output_dir=None, hf_generator_output_dir=None):
  """Ours -> Hugging Face directories (discriminator and/or generator)."""
  for output_dir in (hf_output_dir, hf_generator_output_dir):
    if output_dir:
      electra_parts.check_new_output(output_dir)
  model = checkpoint_dir.load_checkpoint_dir(checkpoint)
  if hf_output_dir:
    hf_files.write_hf_dir(model, "discriminator", hf_output_dir)
  if hf_generator_output_dir:
    hf_files.write_hf_dir(model, "generator", hf_generator_output_dir)


def export_tf1(checkpoint, tf1_output_prefix):
  """Ours -> a checkpoint under the original TF1 names; returns the names."""
  model = checkpoint_dir.load_checkpoint_dir(checkpoint)
  return tf1_files.write_tf1_checkpoint(model, tf1_output_prefix)


# The longest sequence an imported SQuAD model packs to: the original's 512,
# or the position table when it is shorter.
MAX_QA_SEQ_LENGTH = 512


def _check_hf_head(run_dir, head_config):
  """Refuses, before any weight is read, a head Hugging Face cannot hold."""
  parts = [part for part, present in (
      ("the joint-prediction head", head_config.joint_prediction),
      ("the answerability classifier", head_config.answerable_classifier))
           if present]
  if parts:
    raise electra_parts.ConversionError(
        f"{run_dir}: fine-tuned with {' and '.join(parts)}, which Hugging "
        f"Face's {span_head_hf.ARCHITECTURE} cannot hold; only a model "
        "fine-tuned with squad_task.joint_prediction = False and "
        "squad_task.answerable_classifier = False converts")


def export_hf_question_answering(finetuned_dir, hf_output_dir):
  """A fine-tuned SQuAD model -> Hugging Face `ElectraForQuestionAnswering`.

  Writes `config.json` and `model.safetensors` (as the discriminator's
  export, no tokenizer files) to a new folder, published whole
  (`span_head_hf.write_hf_question_answering_dir`).

  Args:
    finetuned_dir: a SQuAD seed folder, its task folder or the fine-tuning
      model_dir (`finetuned_runs.resolve_finetuned_run`).
    hf_output_dir: the new folder (or an empty one).

  Returns:
    The seed folder exported.

  Raises:
    ConversionError: the output exists, or the model has the joint head or
      the answerability classifier (checked before any weight is read).
    ExportError, FinetunedCheckpointError: not a SQuAD seed folder.
  """
  electra_parts.check_new_output(hf_output_dir)
  run_dir = finetuned_runs.resolve_finetuned_run(finetuned_dir)
  description = span_labeler_checkpoint.read_description(run_dir)
  _check_hf_head(run_dir, span_labeler_checkpoint.head_config_of(
      run_dir, description))
  span_labeler, _ = span_labeler_checkpoint.load_span_labeler(run_dir)
  span_head_hf.write_hf_question_answering_dir(span_labeler, hf_output_dir)
  return run_dir


def import_hf_question_answering(hf_dir, output_dir, vocab_file=None,
                                 task_name="SQuAD-1.1", lower_case=None):
  """Hugging Face `ElectraForQuestionAnswering` -> a SQuAD seed folder.

  The folder is what `official_electra.finetune` writes per seed
  (`finetuned_checkpoint.save_finetuned`): the span labeler (its encoder at
  `classifier/encoder`), `vocab.txt` and `model_config.json`, whose
  description records the task, the independent head without classifier and
  the SQuAD settings (the defaults, with `joint_prediction` and
  `answerable_classifier` False). It is written to a staging folder and
  published whole.

  Args:
    hf_dir: the `save_pretrained` folder.
    output_dir: the new seed folder (or an empty one).
    vocab_file: the model's vocabulary; None takes the folder's `vocab.txt`.
    task_name: `SQuAD-1.1` or `SQuAD-2.0`, the task recorded.
    lower_case: whether the vocabulary is uncased; None takes the folder's
      `tokenizer_config.json` `do_lower_case`, else True.

  Returns:
    `output_dir`.

  Raises:
    ConversionError: an unknown task, no vocabulary, a vocabulary of another
      size, the output exists, or the folder is no `ElectraForQuestionAnswering`
      (`span_head_hf.read_hf_question_answering_dir`).
  """
  if task_name not in span_labeler_checkpoint.TASK_NAMES:
    raise electra_parts.ConversionError(
        f"unknown SQuAD task {task_name!r}; pass --task="
        f"{' or --task='.join(span_labeler_checkpoint.TASK_NAMES)}")
  electra_parts.check_new_output(output_dir)
  span_labeler = span_head_hf.read_hf_question_answering_dir(hf_dir)
  folder_vocab, folder_case = hf_files.read_tokenizer_files(hf_dir)
  vocab_file = vocab_file or folder_vocab
  if vocab_file is None:
    raise electra_parts.ConversionError(
        f"{hf_dir} has no {hf_files.VOCAB_FILE}, and a fine-tuned model keeps "
        "its vocabulary: pass --vocab_file=vocab.txt (the model's WordPiece "
        "vocabulary)")
  if lower_case is None:
    lower_case = True if folder_case is None else folder_case
  encoder_config = encoder_config_lib.EncoderConfig.from_dict(
      {key: value for key, value in span_labeler.encoder.get_config().items()
       if key != "name"})
  electra_parts.special_token_ids_from(vocab_file, encoder_config.vocab_size)
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(vocab_file, lower_case)
  # The description the trainer records (`SquadFamily.describe`).
  description = span_labeler_checkpoint.describe(
      task_name, span_labeler_checkpoint.SquadSettings(
          joint_prediction=False, answerable_classifier=False))
  max_seq_length = min(encoder_config.max_position_embeddings,
                       MAX_QA_SEQ_LENGTH)
  staging = files.staging_folder(output_dir)
  try:
    finetuned_checkpoint.save_finetuned(span_labeler, staging, tokenizer,
                                        max_seq_length, description)
    files.publish_folder(staging, output_dir,
                         last=model_config_lib.MODEL_CONFIG_FILE)
  except BaseException:
    files.remove_tree(staging)
    raise
  return output_dir
