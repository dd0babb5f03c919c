"""The analytic FLOPs counter against the paper's compute figures (Table 1)."""

import pytest

from official_electra.modeling import encoder_config
from official_electra.modeling.layers import dynamic_masking
from official_electra.training import flops

_SMALL = encoder_config.EncoderConfig()
_BASE = encoder_config.EncoderConfig(
    embedding_size=768, hidden_size=768, num_attention_heads=12,
    intermediate_size=3072)


@pytest.mark.parametrize("config,fraction,seq_length,batch,steps,paper", [
    (_SMALL, 0.25, 128, 128, 1_000_000, 1.4e18),
    (_BASE, 1 / 3, 512, 256, 766_000, 6.4e19)])
def test_total_train_flops_are_near_the_papers(config, fraction, seq_length,
                                               batch, steps, paper):
  # Matmuls only: within 20% of the paper's totals, which also count
  # softmax, LayerNorm, GELU and the like.
  counted = flops.pretraining_flops(
      config, config.scaled(fraction), "electra", seq_length,
      dynamic_masking.max_predictions_per_seq(seq_length, 0.15))
  total = counted.train_per_example * batch * steps
  assert paper * 0.8 < total < paper * 1.2


def test_generator_costs_scale_with_its_width_and_mlm_has_none():
  def forward(fraction, objective="electra"):
    generator = None if objective == "mlm" else _SMALL.scaled(fraction)
    return flops.pretraining_flops(_SMALL, generator, objective, 128,
                                   19).forward_per_example
  assert forward(0.25) < forward(0.5) < forward(1.0)
  assert forward(1.0, "mlm") < forward(0.25)
  layer = flops.encoder_forward_flops_per_token(_SMALL, 128)
  # 12 layers x (4 H^2 + 2 H FFN) multiply-adds x 2, + attention + projection.
  assert layer == 2 * 128 * 256 + 12 * (
      2 * 4 * 256 * 256 + 2 * 2 * 128 * 256 + 2 * 2 * 256 * 1024)
