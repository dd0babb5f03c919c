"""The tasks' own training sentences, without labels, as pretraining text.

Task-adaptive pretraining (Gururangan et al., 2020) adds the unlabelled text
of the downstream tasks' training sets to the pretraining corpus. The study
uses it as one of its levers (`efficiency_study.task_text_copies`): the
training split of every task it scores, never a dev or test split, written
in the corpus format the dataset tool reads (one sentence per line, a blank
line between documents).

Each example's sentence (or its two sentences, one line each, so a pair keeps
its order inside a document) goes into documents of `examples_per_document`
examples, so packing fills each record with several examples rather than
padding one. The text is written `copies` times, each copy in its own order
(a seeded shuffle), which weighs the task text against the corpus without
repeating one packing of it.
"""

import random
from typing import Sequence

from official_electra import files
from official_electra.data import glue

TRAIN_SPLIT = "train"


def training_texts(glue_dir: str, task_names: Sequence[str]):
  """`[(text_a, text_b or None)]` of every task's training split, in order."""
  return [(example.text_a, example.text_b)
          for task_name in task_names
          for example in glue.read_split(glue_dir, task_name, TRAIN_SPLIT)]


def write_task_text(path: str, glue_dir: str, task_names: Sequence[str],
                    copies: int, examples_per_document: int = 16,
                    seed: int = 0) -> dict:
  """Writes the training text of `task_names` to `path` (atomically).

  Args:
    path: the text file to write.
    glue_dir: GLUE data folder.
    task_names: the tasks whose `train` split is read (labels are dropped).
    copies: how many times the text is written, each copy shuffled anew.
    examples_per_document: examples per document (a blank line after each).
    seed: seed of the shuffles.

  Returns:
    `{"examples": per copy, "copies": copies, "lines": lines written}`.

  Raises:
    ValueError: `copies` or `examples_per_document` is below 1.
    glue.GlueDataError: a training file is missing or malformed.
  """
  if copies < 1:
    raise ValueError(f"copies must be at least 1, got {copies}")
  if examples_per_document < 1:
    raise ValueError("examples_per_document must be at least 1, got "
                     f"{examples_per_document}")
  texts = training_texts(glue_dir, task_names)
  rng = random.Random(seed)
  lines = []
  for _ in range(copies):
    order = list(range(len(texts)))
    rng.shuffle(order)
    for start in range(0, len(order), examples_per_document):
      for index in order[start:start + examples_per_document]:
        lines.extend(_one_line(text) for text in texts[index] if text)
      lines.append("")
  files.write_text(path, "\n".join(lines) + "\n")
  return {"examples": len(texts), "copies": copies,
          "lines": sum(1 for line in lines if line)}


def _one_line(text):
  # A sentence must stay one line of the corpus format.
  return " ".join(text.split())
