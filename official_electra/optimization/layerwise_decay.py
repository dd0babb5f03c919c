"""Layer-wise learning-rate decay for fine-tuning (Clark et al., 2020, Appendix A).

Variables closer to the input learn more slowly. Count depth from the top: the
task head is depth 0, the top Transformer block (`layer_{L-1}`) depth 1, ...,
the bottom block (`layer_0`) depth L, and the embedding block together with
`embeddings_project` depth L + 1. A variable at depth k trains with
`learning_rate * decay_rate**k` (rule `"paper"`, the default: the text's
"layer k from the top gets lr * decay^k, the embeddings the smallest, the task
head the full lr").

The original code (`finetune/task_builder` -> `model/optimization.py`,
`_get_layer_lrs`) places the head at depth L + 2 from the embeddings, so every
encoder variable gets one extra factor of `decay_rate`: the top block
`decay_rate**2`, the embeddings `decay_rate**(L + 2)`. Rule `"original_code"`
reproduces that to match the released numbers exactly.

The multipliers are looked up by variable name: `layer_{i}/` marks block i and
`embeddings` marks the embedding block and projection, as `ElectraEncoder` names
them; every other variable (the task head) gets the full learning rate.
"""

import re
from typing import Callable

LAYERWISE_DECAY_RULES = ("paper", "original_code")

_BLOCK_PATTERN = re.compile(r"(?:^|/)layer_(\d+)/")
_EMBEDDINGS_PATTERN = re.compile(r"(?:^|/)embeddings(?:_project)?/")


def layerwise_learning_rate_multipliers(
    num_layers: int, decay_rate: float,
    rule: str = "paper") -> Callable[[str], float]:
  """Returns `variable_name -> learning-rate multiplier` for an L-layer encoder.

  Args:
    num_layers: L, the encoder's number of Transformer blocks.
    decay_rate: factor per level of depth, in (0, 1]; 1.0 turns decay off.
      The recipe uses 0.8 for Small and Base, 0.9 for Large.
    rule: `"paper"` (top block `decay_rate`) or `"original_code"` (top block
      `decay_rate**2`); see the module docstring.

  Returns:
    A function from a variable's name to its multiplier, suitable for
    `ElectraAdamW(learning_rate_multipliers=...)`.

  Raises:
    ValueError: bad `num_layers`, `decay_rate` or `rule`; and, when the function
      is called, a name with a block index outside `[0, num_layers)`.
  """
  if num_layers < 1:
    raise ValueError(f"num_layers must be positive, got {num_layers}")
  if not 0.0 < decay_rate <= 1.0:
    raise ValueError(f"decay_rate must be in (0, 1], got {decay_rate}")
  if rule not in LAYERWISE_DECAY_RULES:
    raise ValueError(f"unknown layer-wise decay rule {rule!r}; valid rules: "
                     f"{', '.join(LAYERWISE_DECAY_RULES)}")
  encoder_offset = 1 if rule == "original_code" else 0

  def multiplier(variable_name: str) -> float:
    block_match = _BLOCK_PATTERN.search(variable_name)
    if block_match:
      block_index = int(block_match.group(1))
      if block_index >= num_layers:
        raise ValueError(f"variable {variable_name} belongs to block "
                         f"{block_index}, but the encoder has {num_layers}")
      depth = num_layers - block_index + encoder_offset
    elif _EMBEDDINGS_PATTERN.search(variable_name):
      depth = num_layers + 1 + encoder_offset
    else:
      depth = 0
    return decay_rate**depth

  return multiplier
