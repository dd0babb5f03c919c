"""The analytic FLOPs counts against the authors' script and the paper, and
the count a pretraining run's log names."""

import json

import pytest

from official_electra import settings_check
from official_electra.modeling import encoder_config
from official_electra.modeling.layers import dynamic_masking
from official_electra.training import callbacks
from official_electra.training import flops
from tests.training import tiny_pretraining

_SMALL = encoder_config.EncoderConfig()
_BASE = encoder_config.EncoderConfig(
    embedding_size=768, hidden_size=768, num_attention_heads=12,
    intermediate_size=3072)
# The efficiency study's encoder (gin/experiments/cpu_efficiency.gin) on its
# vocabulary (docs/experiments/study_full_sets/results.json).
_STUDY = encoder_config.EncoderConfig(
    vocab_size=7985, embedding_size=128, hidden_size=128, num_layers=4,
    num_attention_heads=2, intermediate_size=512, max_position_embeddings=64)

# The paper's runs as the authors' MODEL_FLOPS lists them: (discriminator,
# generator fraction or None for BERT, sequence length, batch, steps). Their
# output_frac 0.15625 is 20 of 128 and 80 of 512 positions.
_RUNS = {
    "bert_small": (_SMALL, None, 128, 128, 1.45e6),
    "bert_base": (_BASE, None, 512, 256, 1e6),
    "electra_small": (_SMALL, 0.25, 128, 128, 1e6),
    "electra_base": (_BASE, 1 / 3, 512, 256, 766_000),
}


def _paper_total(run):
  config, fraction, seq_length, batch, steps = _RUNS[run]
  generator = None if fraction is None else config.scaled(fraction)
  objective = "mlm" if fraction is None else "electra"
  schedule = flops.train_flops_schedule(
      config, generator, objective, seq_length,
      round(0.15625 * seq_length), batch, count="paper")
  return schedule.at(steps)


@pytest.mark.parametrize("run,printed", [
    # What the authors' flops_computation.py (google-research/electra,
    # MODEL_FLOPS) prints for these runs.
    ("bert_small", 1.4187399146496e+18),
    ("bert_base", 6.428335104e+19),
    ("electra_small", 1.293743798272e+18),
    ("electra_base", 6.424541834277683e+19)])
def test_paper_count_gives_the_authors_totals(run, printed):
  assert _paper_total(run) == pytest.approx(printed, rel=1e-3)


@pytest.mark.parametrize("run,table", [
    # Clark et al. (2020), Tables 1 and 8, train FLOPs.
    ("electra_small", 1.4e18), ("bert_small", 1.4e18),
    ("electra_base", 6.4e19), ("bert_base", 6.4e19)])
def test_paper_count_is_near_the_papers_tables(run, table):
  assert abs(_paper_total(run) / table - 1) < 0.1


@pytest.mark.parametrize("config,fraction,seq_length,batch,steps,paper", [
    (_SMALL, 0.25, 128, 128, 1_000_000, 1.4e18),
    (_BASE, 1 / 3, 512, 256, 766_000, 6.4e19)])
def test_matmul_count_is_within_a_fifth_of_the_papers_totals(
    config, fraction, seq_length, batch, steps, paper):
  # Matmuls only, backward = 2 x forward: within 20% of the paper's totals.
  counted = flops.pretraining_flops(
      config, config.scaled(fraction), "electra", seq_length,
      dynamic_masking.max_predictions_per_seq(seq_length, 0.15),
      count="matmul")
  total = counted.train_per_example * batch * steps
  assert paper * 0.8 < total < paper * 1.2


def test_training_is_two_forward_passes_on_the_paper_count_three_on_matmul():
  for count, passes in (("paper", 2), ("matmul", 3)):
    counted = flops.pretraining_flops(_SMALL, _SMALL.scaled(0.25), "electra",
                                      128, 19, count=count)
    assert counted.count == count
    assert counted.train_per_example == passes * counted.forward_per_example


def test_paper_count_prices_a_layer_and_the_dense_lookup_as_the_authors():
  hidden, inner, seq, heads = 256, 1024, 128, 4
  layer = (3 * 2 * hidden * hidden + 3 * hidden + 2 * hidden * seq
           + (5 + 4 + 1) * seq * heads + 2 * hidden * seq
           + 2 * hidden * hidden + hidden + 4 * hidden + hidden
           + 5  # The authors' attention LayerNorm: 5, not 5 x hidden.
           + 2 * hidden * inner + 8 * inner + inner
           + 2 * hidden * inner + hidden + 4 * hidden + hidden + 5 * hidden)
  assert flops.paper_layer_flops_per_token(_SMALL, seq) == layer
  embedding, vocab = 128, 30522
  lookup = (2 * embedding * vocab + 2 * embedding * (seq + 2) + 2 * embedding
            + 5 * embedding + 4 * embedding + 2 * embedding * hidden + hidden)
  assert flops.paper_input_embedding_flops_per_token(_SMALL, seq) == lookup
  # Without a projection (E = H) there is none to pay for.
  assert flops.paper_input_embedding_flops_per_token(_BASE, seq) == (
      2 * 768 * vocab + 2 * 768 * (seq + 2) + 2 * 768 + 9 * 768)


def test_the_study_step_costs_on_both_counts():
  generator = _STUDY.scaled(0.25)
  slots = dynamic_masking.max_predictions_per_seq(64, 0.15)

  def step(objective, count):
    return flops.train_flops_schedule(
        _STUDY, generator if objective == "electra" else None, objective, 64,
        slots, 64, count=count).first_per_step
  # The matmul count is what planned the committed study
  # (docs/experiments/study_full_sets/results.json, train_flops_per_step).
  assert step("electra", "matmul") == 26601504768
  assert step("mlm", "matmul") == 24526897152
  # On the paper's count the generator's tower pays for its own dense lookup
  # (2 x 128 x 7985 FLOPs a token, more than the four layers): an ELECTRA
  # step costs about 1.55 MLM steps, not 1.08.
  ratio = step("electra", "paper") / step("mlm", "paper")
  assert ratio == pytest.approx(1.547, abs=1e-3)
  assert step("electra", "matmul") / step("mlm", "matmul") == pytest.approx(
      1.085, abs=1e-3)


@pytest.mark.parametrize("count", flops.COUNTS)
def test_every_objective_is_priced_by_its_parts(count):
  generator = _SMALL.scaled(0.25)

  def forward(objective, with_generator=True, stage=None):
    return flops.pretraining_flops(
        _SMALL, generator if with_generator else None, objective, 128, 19,
        stage=stage, count=count)
  electra = forward("electra").forward_per_example
  mlm = forward("mlm", with_generator=False).forward_per_example
  # ELECTRA 15% runs the same networks; only its loss differs.
  assert forward("electra_15").forward_per_example == electra
  # A uniform or unigram sampler costs nothing: no generator tower or head.
  uniform = forward("electra", with_generator=False).forward_per_example
  assert uniform < electra
  replace = forward("replace_mlm").forward_per_example
  assert replace == mlm + electra - uniform
  # All-Tokens MLM predicts every position, and has the copy head.
  assert forward("all_tokens_mlm").forward_per_example > replace
  # Adversarial ELECTRA adds the baseline's dense(H_g -> 1) at each slot.
  assert forward("adversarial").forward_per_example == electra + 19 * 2 * 64
  # Two-Stage: stage 1 is a masked LM; stage 2 trains the discriminator and
  # runs the frozen generator forward only.
  assert forward("two_stage", False, stage=1) == forward("mlm", False)
  stage_two = forward("two_stage", stage=2)
  assert stage_two.forward_per_example == uniform
  assert stage_two.frozen_forward_per_example == electra - uniform
  assert stage_two.train_per_example < forward("electra").train_per_example


def test_generator_costs_scale_with_its_width_and_mlm_has_none():
  def forward(fraction, objective="electra"):
    generator = None if objective == "mlm" else _SMALL.scaled(fraction)
    return flops.pretraining_flops(_SMALL, generator, objective, 128,
                                   19).forward_per_example
  assert forward(0.25) < forward(0.5) < forward(1.0)
  assert forward(1.0, "mlm") < forward(0.25)
  layer = flops.matmul_tower_flops_per_token(_SMALL, 128)
  # 12 layers x (4 H^2 + 2 H FFN) multiply-adds x 2, + attention + projection.
  assert layer == 2 * 128 * 256 + 12 * (
      2 * 4 * 256 * 256 + 2 * 2 * 128 * 256 + 2 * 2 * 256 * 1024)


def test_an_unknown_count_names_the_known_ones():
  with pytest.raises(ValueError, match="'paper', 'matmul'"):
    flops.pretraining_flops(_SMALL, None, "mlm", 128, 19, count="measured")


@pytest.mark.parametrize("count", [None, "matmul"])
def test_a_run_logs_its_flops_on_the_count_it_names(tmp_path, pretraining_data,
                                                    count):
  settings = {} if count is None else {"flops_count": count}
  tiny_pretraining.train(tmp_path, pretraining_data, num_train_steps=2,
                         **settings)
  with open(tmp_path / callbacks.METRICS_LOG_FILE) as log_file:
    records = [json.loads(line) for line in log_file]
  expected = count or "paper"
  encoder = tiny_pretraining.tiny_encoder(pretraining_data[2])
  seq = tiny_pretraining.SEQ_LENGTH
  step = flops.train_flops_schedule(
      encoder, encoder.scaled(0.5), "electra", seq,
      dynamic_masking.max_predictions_per_seq(seq, 0.15), 4,
      count=expected).first_per_step
  assert [(r["flops_count"], r["train_flops"]) for r in records] == [
      (expected, step), (expected, 2 * step)]


def test_a_run_refuses_an_unknown_count(tmp_path, pretraining_data):
  with pytest.raises(settings_check.SettingError,
                     match="run_pretraining.flops_count = 'measured'"):
    tiny_pretraining.train(tmp_path, pretraining_data, flops_count="measured")
