"""Settings of the wrong type or outside their range, caught before any work.

Every program checks its run settings (gin bindings and flags alike) and its
output paths before it reads data or writes anything, and names the first bad
one in a single line: `run_pretraining.mask_prob = 1.5 must be a number in
(0, 1]; fix the binding or flag`. Pure Python: the programs' modules at every
tier use it.
"""

import dataclasses
import math
import os
from typing import Callable

from official_electra import errors


class GinConfigError(errors.UserError):
  """A gin file is missing, or a binding does not parse or name a parameter."""


class SettingError(GinConfigError):
  """A setting (binding or flag) of the wrong type or range, or an output path
  that cannot be a folder; the message names it and the fix."""


@dataclasses.dataclass(frozen=True)
class Rule:
  """What a setting must be: `description` ("an integer >= 1") and a test."""
  description: str
  accepts: Callable[[object], bool]


def _is_integer(value):
  return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
  return (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value))


def integer(minimum=None):
  """An int (not a bool), at least `minimum` when given."""
  if minimum is None:
    return Rule("an integer", _is_integer)
  return Rule(f"an integer >= {minimum}",
              lambda value: _is_integer(value) and value >= minimum)


def number(low=None, high=None, low_open=True, high_open=False):
  """A finite int or float in the interval (low, high] by default."""
  if low is None and high is None:
    return Rule("a number", _is_number)
  if high is None:
    description = f"a number {'>' if low_open else '>='} {low}"
  elif low is None:
    description = f"a number {'<' if high_open else '<='} {high}"
  else:
    description = (f"a number in {'(' if low_open else '['}{low}, {high}"
                   f"{')' if high_open else ']'}")

  def accepts(value):
    if not _is_number(value):
      return False
    if low is not None and (value <= low if low_open else value < low):
      return False
    return high is None or (value < high if high_open else value <= high)

  return Rule(description, accepts)


def one_of(*values):
  return Rule("one of " + ", ".join(repr(value) for value in values),
              lambda value: value in values)


BOOLEAN = Rule("True or False", lambda value: isinstance(value, bool))
POSITIVE_INTEGER = integer(1)
NON_NEGATIVE_INTEGER = integer(0)
POSITIVE_NUMBER = number(0)
NON_NEGATIVE_NUMBER = number(0, low_open=False)
# Probabilities and rates that may be 0 but not 1 (dropout, decay, warm-up).
RATE = number(0, 1, low_open=False, high_open=True)
# Fractions that may be 1 but not 0 (masking, generator size).
FRACTION = number(0, 1)


def optional(rule):
  """None, or what `rule` accepts."""
  return Rule(f"None or {rule.description}",
              lambda value: value is None or rule.accepts(value))


def check(settings, rules, prefix, fix="fix the binding or flag"):
  """Raises SettingError naming the first of `settings` a rule refuses.

  Args:
    settings: `{name: value}`.
    rules: `{name: Rule}`; names absent from `settings` are skipped.
    prefix: what the message puts before the name (`run_pretraining.`).
    fix: the fix the message ends with.
  """
  for name, rule in rules.items():
    if name in settings and not rule.accepts(settings[name]):
      raise SettingError(f"{prefix}{name} = {settings[name]!r} must be "
                         f"{rule.description}; {fix}")


ENCODER_RULES = {
    "vocab_size": POSITIVE_INTEGER,
    "embedding_size": POSITIVE_INTEGER,
    "hidden_size": POSITIVE_INTEGER,
    "num_layers": POSITIVE_INTEGER,
    "num_attention_heads": POSITIVE_INTEGER,
    "intermediate_size": POSITIVE_INTEGER,
    "max_position_embeddings": POSITIVE_INTEGER,
    "type_vocab_size": POSITIVE_INTEGER,
    "dropout_rate": RATE,
    "attention_dropout_rate": RATE,
    "initializer_range": POSITIVE_NUMBER,
    "layer_norm_epsilon": POSITIVE_NUMBER,
}


def check_encoder(config, prefix, fix="fix the binding"):
  """Checks an `EncoderConfig`'s fields and that the heads split the width."""
  values = dataclasses.asdict(config)
  check(values, ENCODER_RULES, prefix, fix)
  if values["hidden_size"] % values["num_attention_heads"]:
    raise SettingError(
        f"{prefix}hidden_size = {values['hidden_size']} is not a multiple of "
        f"{prefix}num_attention_heads = {values['num_attention_heads']}; "
        f"{fix}")


def check_output_dir(path, setting):
  """Raises SettingError unless `path` is, or can be created as, a folder.

  Local paths only (a `scheme://` path is left to the filesystem's first
  write). Nothing is created.

  Args:
    path: the folder.
    setting: its name in the message (`--model_dir`).
  """
  if not isinstance(path, (str, os.PathLike)) or not str(path):
    raise SettingError(f"{setting} = {path!r} must be a folder path")
  path = os.fspath(path)
  if "://" in path:
    return
  existing = os.path.abspath(path)
  while not os.path.exists(existing):
    existing = os.path.dirname(existing)
  if existing == os.path.abspath(path):
    if not os.path.isdir(path):
      raise SettingError(f"{setting}={path} is a file, not a folder: pass a "
                         "folder (new or existing)")
  elif not os.path.isdir(existing):
    raise SettingError(f"{setting}={path} cannot be created: {existing} is a "
                       "file: pass a folder path")
  if not os.access(existing, os.W_OK | os.X_OK):
    raise SettingError(f"{setting}={path} cannot be written ({existing} is "
                       "not writable): pass a writable folder")
