"""Two-Stage ELECTRA's switch (Clark et al., 2020, Section 3.3): the weights
of stage 1's masked LM copied into the generator that stage 2 freezes."""

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


def copy_masked_lm(source_network, source_head, target_network, target_head):
  """Makes `target_network` and `target_head` a copy of the masked LM
  `source_network` with `source_head` (embeddings, every layer, the head)."""
  copy_network_weights(source_network, target_network)
  for source, target in zip(head_weights(source_head),
                            head_weights(target_head)):
    target.assign(source)
