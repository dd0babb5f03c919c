"""The checks of `ElectraPretrainer`'s arguments: each says which argument
to change for the objective chosen."""

from official_electra.modeling import objectives
from official_electra.modeling.layers import span_masking


def check_arguments(spec: objectives.ObjectiveSpec, model, *, mask_token_id,
                    max_predictions_per_seq, uniform_generator,
                    unigram_counts, disallow_correct, masking_draws,
                    masking_scheme, adversarial_mle_steps,
                    gradient_accumulation_steps) -> None:
  """Raises ValueError, naming the fix, when the arguments of
  `ElectraPretrainer` (see there) cannot train objective `spec`."""
  objective = spec.name
  if model is None:
    raise ValueError("the pretrainer needs the ElectraModel it trains")
  discriminator_network = getattr(model, "discriminator_network", None)
  generator_network = getattr(model, "generator_network", None)
  needed = set(spec.heads(generator_network is not None))
  if not needed <= set(model.heads):
    raise ValueError(f"objective {objective!r} trains the heads "
                     f"{sorted(needed)}; the model has {list(model.heads)}")
  if discriminator_network is None:
    raise ValueError("the pretrainer needs a discriminator network")
  if mask_token_id is None or max_predictions_per_seq is None:
    raise ValueError("pass mask_token_id and max_predictions_per_seq")
  if not spec.samples_replacements and (generator_network is not None or
                                        uniform_generator):
    raise ValueError(f"objective {objective!r} trains the discriminator "
                     "network as a masked LM: pass generator_network=None "
                     "and uniform_generator=False")
  samplers = [generator_network is not None, bool(uniform_generator),
              unigram_counts is not None]
  if not spec.samples_replacements and unigram_counts is not None:
    raise ValueError(f"objective {objective!r} has no generator: pass "
                     "unigram_counts=None")
  if spec.samples_replacements and sum(samplers) != 1:
    raise ValueError(f"objective {objective!r} needs either a "
                     "generator_network, uniform_generator=True or "
                     "unigram_counts (exactly one)")
  if unigram_counts is not None and disallow_correct:
    raise ValueError("disallow_correct is not available with a unigram "
                     "generator")
  if spec.sampler == objectives.GENERATOR_NETWORK and (
      generator_network is None):
    raise ValueError(f"objective {objective!r} trains a generator network: "
                     "pass generator_network (not a uniform or unigram "
                     "sampler)")
  if not spec.ties_embeddings and (
      generator_network.embedding_layer is
      discriminator_network.embedding_layer):
    raise ValueError(f"objective {objective!r} copies one tower into the "
                     "other: give the two networks their own embeddings "
                     "(not tied)")
  if adversarial_mle_steps and not spec.reinforce:
    raise ValueError("adversarial_mle_steps is for objective "
                     f"'adversarial', not {objective!r}")
  if masking_scheme not in span_masking.SCHEMES:
    raise ValueError(f"unknown masking_scheme {masking_scheme!r}; choose "
                     f"one of {span_masking.SCHEMES}")
  if not span_masking.takes_draws(masking_scheme, masking_draws):
    raise ValueError(f"masking_draws={masking_draws!r} is for "
                     "masking_scheme='tokens', not "
                     f"{masking_scheme!r}")
  if int(gradient_accumulation_steps) < 1:
    raise ValueError("gradient_accumulation_steps must be at least 1, got "
                     f"{gradient_accumulation_steps}")
