"""What the serving benchmark serves: exports made by the project's own code,
their Hugging Face twin, and the text (GLUE dev or generated).

`make_exports` writes, in a scratch folder, a pretraining checkpoint with
random weights (`conversion.electra_parts.build_model` and
`checkpoint_dir.write_checkpoint_dir`, so it is a model_dir like any other),
exports its discriminator as `official_electra.export --model_dir` does
(`serving.pretraining_export`), writes the same weights as a Hugging Face
directory as `official_electra.convert --hf_output_dir` does
(`conversion.converters.export_hf`), and for each input kind builds a
classifier on that checkpoint (`finetuning.glue_family.build_classifier`; its
head random, not trained), saves it as `official_electra.finetune` saves a
seed and exports it as
`official_electra.export --finetuned_dir` does
(`serving.classifier_export`). Single sentences are SST-2's classifier, pairs
MRPC's.
"""

import dataclasses
import os

import numpy as np

from official_electra import errors
from official_electra.benchmark import shapes

CLASSIFIER_TASKS = {"single": "SST-2", "pair": "MRPC"}
# GLUE-like lengths in words (SST-2 dev: 19 on average; MRPC: 22 a sentence).
_GENERATED_WORDS = {"single": (19, 9), "pair": (22, 5)}
_GENERATED_COUNT = 512


@dataclasses.dataclass
class Exports:
  """Paths of what `make_exports` wrote.

  Attributes:
    discriminator: the discriminator's SavedModel, or None.
    classifiers: `{inputs: SavedModel}` for `single` and/or `pair`.
    classifier_heads: `{inputs: (kernel [hidden, labels], bias [labels])}`,
      the heads' weights, for the Hugging Face twin.
    hf_dir: the Hugging Face `ElectraForPreTraining` directory.
  """
  discriminator: str
  classifiers: dict
  classifier_heads: dict
  hf_dir: str


def make_exports(work_dir, model, vocab_file, seq_len, discriminator=True,
                 classifier_inputs=("single", "pair")):
  """Writes the SavedModels and the Hugging Face directory under `work_dir`."""
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official_electra.conversion import checkpoint_dir  # pylint: disable=g-import-not-at-top
  from official_electra.conversion import converters  # pylint: disable=g-import-not-at-top
  from official_electra.conversion import electra_parts  # pylint: disable=g-import-not-at-top
  from official_electra.finetuning import glue_family  # pylint: disable=g-import-not-at-top
  from official_electra.finetuning import tasks  # pylint: disable=g-import-not-at-top
  from official_electra.finetuning import trainer  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import classifier_checkpoint  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import model_config as model_config_lib  # pylint: disable=g-import-not-at-top
  from official_electra.serving import classifier_export  # pylint: disable=g-import-not-at-top
  from official_electra.serving import pretraining_export  # pylint: disable=g-import-not-at-top
  from official_electra.tokenization import wordpiece_tokenizer  # pylint: disable=g-import-not-at-top

  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(vocab_file,
                                                     lower_case=True)
  special_token_ids = tokenizer.special_token_ids()
  config = shapes.discriminator_config(model, tokenizer.vocab_size)
  if seq_len > config.max_position_embeddings:
    raise errors.UserError(f"--seq_len={seq_len} is longer than the {model} "
                           f"model's {config.max_position_embeddings} "
                           "positions: pass a shorter --seq_len")
  tf_keras.utils.set_random_seed(0)
  towers = electra_parts.build_model(
      config, config.scaled(shapes.generator_fraction(model)))
  model_dir = os.path.join(work_dir, "pretrained")
  checkpoint_dir.write_checkpoint_dir(towers, model_dir, special_token_ids,
                                      vocab_file, lower_case=True)
  # The text signatures pack to the run's max_seq_length; a conversion
  # records the position table's length (512), a run its own: ours is seq_len.
  recorded = model_config_lib.read_model_config(model_dir)
  model_config_lib.write_model_config(
      model_dir, dataclasses.replace(recorded.model, max_seq_length=seq_len))
  exports = Exports(discriminator=None, classifiers={}, classifier_heads={},
                    hf_dir=os.path.join(work_dir, "hf_discriminator"))
  converters.export_hf(model_dir, hf_output_dir=exports.hf_dir)
  if discriminator:
    exports.discriminator = os.path.join(work_dir, "exports", "discriminator")
    pretraining_export.export_pretrained(model_dir, exports.discriminator)
  for inputs in classifier_inputs:
    task = tasks.get_task(CLASSIFIER_TASKS[inputs])
    hyperparameters = trainer.FinetuneHyperparameters(max_seq_length=seq_len)
    classifier = glue_family.build_classifier(config, task, hyperparameters,
                                          init_checkpoint=model_dir)
    run_dir = os.path.join(work_dir, "finetuned", task.name, "seed_0")
    classifier_checkpoint.save_classifier(
        classifier, run_dir, tokenizer, hyperparameters.max_seq_length,
        task.name, task.labels, task.is_pair_task)
    exports.classifiers[inputs] = os.path.join(work_dir, "exports",
                                               f"classifier_{inputs}")
    classifier_export.export_classifier(run_dir, exports.classifiers[inputs])
    dense = classifier.classification_head.dense
    exports.classifier_heads[inputs] = (dense.kernel.numpy(),
                                        dense.bias.numpy())
  return exports


def write_generated_vocabulary(path, num_words=2000):
  """A WordPiece vocabulary of made-up lower-case words (no ../shared)."""
  rng = np.random.default_rng(0)
  syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
  words = set()
  while len(words) < num_words:
    words.add("".join(rng.choice(syllables, size=rng.integers(1, 4))))
  with open(path, "w", encoding="utf-8") as vocab_file:
    vocab_file.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
                                ".", ",", *sorted(words)]) + "\n")
  return path


def read_glue_texts(glue_dir):
  """`{"single": [(sentence,)], "pair": [(sentence1, sentence2)]}` from
  SST-2's and MRPC's dev files, or None when they are not there."""
  from official_electra.data import glue  # pylint: disable=g-import-not-at-top
  if not glue_dir or not all(
      os.path.isfile(glue.split_path(glue_dir, task, "dev"))
      for task in CLASSIFIER_TASKS.values()):
    return None
  single = glue.read_split(glue_dir, CLASSIFIER_TASKS["single"], "dev")
  pair = glue.read_split(glue_dir, CLASSIFIER_TASKS["pair"], "dev")
  return {"single": [(example.text_a,) for example in single],
          "pair": [(example.text_a, example.text_b) for example in pair]}


def generate_texts(vocab_file, count=_GENERATED_COUNT):
  """Sentences of GLUE-like lengths from the vocabulary's whole words."""
  with open(vocab_file, encoding="utf-8") as vocab:
    words = [word for word in vocab.read().split("\n")
             if len(word) > 1 and word.isalpha() and word.islower()]
  rng = np.random.default_rng(0)

  def sentence(mean, spread):
    length = int(np.clip(rng.normal(mean, spread), 3, 3 * mean))
    return " ".join(rng.choice(words, size=length)) + " ."

  return {inputs: [tuple(sentence(*_GENERATED_WORDS[inputs])
                         for _ in range(1 if inputs == "single" else 2))
                   for _ in range(count)]
          for inputs in ("single", "pair")}


def pack_token_ids(vocab_file, texts, seq_len):
  """The texts as the text signatures pack them: `{inputs: {name: int32
  [examples, seq_len]}}`, for the token-id signatures."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official_electra.tokenization import wordpiece_tokenizer  # pylint: disable=g-import-not-at-top
  tokenizer = wordpiece_tokenizer.WordpieceTokenizer(vocab_file,
                                                     lower_case=True)
  packed = {}
  for inputs, rows in texts.items():
    segments = [tokenizer.tokenize(tf.constant(list(column)))
                for column in zip(*rows)]
    packed[inputs] = {name: tensor.numpy() for name, tensor in
                      tokenizer.pack_inputs(segments, seq_len).items()}
  return packed
