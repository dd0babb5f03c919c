"""Two-Stage ELECTRA's stages (Clark et al., 2020, Section 3.3).

Stage 1 trains a masked LM alone; stage 2 trains the discriminator alone
with the RTD loss, initialised from that masked LM, on the samples of the
masked LM frozen as the generator (same size, own embeddings, run without
dropout). In `ElectraPretrainer` the masked LM of stage 1 is
`discriminator_network` with `main_mlm_head` (so every checkpoint's
discriminator is the encoder trained so far); its
`start_discriminator_stage` copies it into `generator_network` and
`generator_head` (`copy_masked_lm`), which is the paper's "initialise the
discriminator with the generator's weights" seen from the other side. The
stage is a variable, saved with the checkpoint.
"""

# The stages: the generator (a masked LM) alone, then the discriminator.
GENERATOR_STAGE, DISCRIMINATOR_STAGE = 1, 2


def copy_network_weights(source, target):
  """Assigns every weight of `source` to the same weight of `target` (two
  networks built from one config; names compared below each one's scope).

  Raises:
    ValueError: the networks' weights differ in names or shapes.
  """
  def relative(variable, network):
    scope = network.name + "/"
    return variable.name[variable.name.find(scope) + len(scope):]
  pairs = list(zip(source.weights, target.weights))
  if len(source.weights) != len(target.weights) or any(
      relative(a, source) != relative(b, target) or a.shape != b.shape
      for a, b in pairs):
    raise ValueError(f"{source.name} and {target.name} differ in their "
                     "weights: Two-Stage needs a generator of the "
                     "discriminator's size")
  for source_variable, target_variable in pairs:
    target_variable.assign(source_variable)


def head_weights(head):
  """A `MaskedLMHead`'s own weights (its word table is its tower's)."""
  return [*head.dense.weights, *head.layer_norm.weights, head.output_bias]


def stage_variables(stage, discriminator_network, main_mlm_head,
                    discriminator_head):
  """The trainable variables a step of `stage` updates, each once (the MLM
  head tracks its tower's embedding layer): stage 1's masked LM, or the
  discriminator with its RTD head."""
  parts = ((discriminator_network, main_mlm_head)
           if stage == GENERATOR_STAGE else
           (discriminator_network, discriminator_head))
  unique = {}
  for part in parts:
    for variable in part.trainable_variables:
      unique.setdefault(variable.ref(), variable)
  return list(unique.values())


def copy_masked_lm(source_network, source_head, target_network, target_head):
  """Makes `target_network` and `target_head` a copy of the masked LM
  `source_network` with `source_head` (embeddings, every layer, the head)."""
  copy_network_weights(source_network, target_network)
  for source, target in zip(head_weights(source_head),
                            head_weights(target_head)):
    target.assign(source)
