"""model_config.json records the generator's sizing rule, the original's
(FFN = 4 x hidden, heads = hidden // 64), and the generator it builds."""

import dataclasses
import json

from official_electra.modeling import encoder_config
from official_electra.training import architecture as architecture_lib

_ENCODER = encoder_config.EncoderConfig(
    vocab_size=50, embedding_size=32, hidden_size=64, num_layers=2,
    num_attention_heads=2, intermediate_size=128, max_position_embeddings=64)


def _architecture(**changes):
  return dataclasses.replace(architecture_lib.PretrainingArchitecture(
      encoder=_ENCODER, generator_hidden_fraction=0.5,
      generator_layers_fraction=1.0, objective="electra",
      uniform_generator=False, max_seq_length=64, mask_prob=0.15,
      special_token_ids={"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3,
                         "[MASK]": 4}), **changes)


def test_a_new_architecture_records_the_originals_rule(tmp_path):
  architecture_lib.write_architecture(str(tmp_path), _architecture())
  recorded = json.loads((tmp_path / "model_config.json").read_text())
  assert (recorded["pretraining"]["generator_sizing"] ==
          encoder_config.GENERATOR_SIZING)
  generator = architecture_lib.read_architecture(
      str(tmp_path)).generator_config()
  # gin/tiny.gin's shape: 4 x 32 = 128 wide, max(1, 32 // 64) = 1 head.
  assert (generator.hidden_size, generator.intermediate_size,
          generator.num_attention_heads) == (32, 128, 1)
  # The model section holds the generator so built.
  assert recorded["model"]["generator"] == dataclasses.asdict(generator)
