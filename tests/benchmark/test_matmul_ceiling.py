"""The benchmark's matmul ceiling times the matmuls that the FLOPs counter's
matmul count counts."""

import time

import pytest

from official_electra.benchmark import matmul_ceiling
from official_electra.modeling import encoder_config
from official_electra.training import flops


@pytest.mark.parametrize("overrides,fraction", [
    (dict(), 0.25),  # Small, generator 1/4.
    (dict(embedding_size=768, hidden_size=768, num_attention_heads=12,
          intermediate_size=3072), 1 / 3),  # Base: no embedding projection.
])
def test_shapes_carry_the_counted_training_flops(overrides, fraction):
  discriminator = encoder_config.EncoderConfig(**overrides)
  generator = discriminator.scaled(fraction)
  batch_size, seq_len, slots = 4, 128, 19
  shapes = matmul_ceiling._matmul_shapes(  # pylint: disable=protected-access
      discriminator, generator, batch_size, seq_len, slots)
  timed = sum(count * 2 * batch * m * k * n
              for (_, batch, m, k, n), count in shapes.items())
  counted = batch_size * flops.pretraining_flops(
      discriminator, generator, "electra", seq_len, slots,
      count="matmul").train_per_example
  # The counter also has the discriminator's dense(H -> 1) and its bias.
  assert timed == pytest.approx(counted, rel=1e-4)
  assert timed < counted


def test_the_vocabulary_projection_is_timed_against_the_untransposed_table():
  # MaskedLMHead multiplies by the [V, E] table with transpose_b; its
  # gradients are an nn product into the rows and a tn product into the
  # table. A dense layer's [E, V] kernel would be nn, nt and tn over [E, V].
  discriminator = encoder_config.EncoderConfig()
  generator = discriminator.scaled(0.25)
  shapes = matmul_ceiling._matmul_shapes(  # pylint: disable=protected-access
      discriminator, generator, batch_size=32, seq_len=128, num_slots=19)
  rows, embedding, vocab = 32 * 19, 128, discriminator.vocab_size
  vocabulary_products = {shape: count for shape, count in shapes.items()
                         if vocab in shape[2:]}
  assert vocabulary_products == {
      ("nt", 1, rows, embedding, vocab): 1,
      ("nn", 1, rows, vocab, embedding): 1,
      ("tn", 1, vocab, rows, embedding): 1,
  }


def test_rate_of_tiny_shapes_is_their_counted_flops_over_their_clocked_time(
    monkeypatch):
  discriminator = encoder_config.EncoderConfig(
      vocab_size=50, embedding_size=8, hidden_size=16, num_layers=1,
      num_attention_heads=2, intermediate_size=32)
  generator = discriminator.scaled(0.5)
  sizes = dict(batch_size=2, seq_len=8, num_slots=2)
  # The real clock, each reading kept.
  clock = time.perf_counter
  readings = []
  monkeypatch.setattr(matmul_ceiling.time, "perf_counter",
                      lambda: readings.append(clock()) or readings[-1])
  started = time.monotonic()
  timings = matmul_ceiling.step_matmul_timings(
      discriminator, generator, mixed_precision="float32", repeats=1, **sizes)
  elapsed = time.monotonic() - started
  rate = matmul_ceiling.flops_per_second(timings)

  # Every product of the step, with its count and FLOPs, which add up to the
  # step's counted training FLOPs (but the discriminator's dense(H -> 1)).
  shapes = matmul_ceiling._matmul_shapes(  # pylint: disable=protected-access
      discriminator, generator, **sizes)
  assert {(t["product"], t["batch"], t["m"], t["k"], t["n"]): t["count"]
          for t in timings} == dict(shapes)
  for t in timings:
    assert t["flops"] == 2 * t["batch"] * t["m"] * t["k"] * t["n"]
  step_flops = sum(t["count"] * t["flops"] for t in timings)
  counted = sizes["batch_size"] * flops.pretraining_flops(
      discriminator, generator, "electra", sizes["seq_len"],
      sizes["num_slots"], count="matmul").train_per_example
  assert 0.9 * counted < step_flops < counted
  # Each product's time is one call between two readings of the clock
  # (repeats=1), all within the time the timing took.
  assert len(readings) == 2 * len(timings)
  clocked = [end - start for start, end in zip(readings[::2], readings[1::2])]
  assert sorted(t["seconds"] for t in timings) == sorted(clocked)
  assert min(clocked) > 0 and sum(clocked) < elapsed
  step_seconds = sum(t["count"] * t["seconds"] for t in timings)
  assert rate == pytest.approx(step_flops / step_seconds, rel=1e-12)


def test_best_seconds_counts_one_call_of_several(monkeypatch):
  clock = {"now": 0.0, "calls": 0}

  class Result:

    def numpy(self):
      return 0

  def function():
    clock["calls"] += 1
    clock["now"] += 2.0  # Every call takes 2 s of the fake clock.
    return Result()

  monkeypatch.setattr(matmul_ceiling.time, "perf_counter",
                      lambda: clock["now"])
  seconds = matmul_ceiling.best_seconds(function, (), repeats=3, calls=4)
  assert seconds == 2.0
  assert clock["calls"] == 1 + 3 * 4  # Warm-up, then 3 timings of 4 calls.
