"""Losses of the ELECTRA pretraining objectives, in float32.

Each loss is a weighted mean: `sum(weight * loss) / sum(weight)`. Under a
`tf.distribute` strategy the denominator is summed over all replicas, so the
sum of the replicas' gradients is exactly the gradient of the global-batch
loss (the same weights as a single-device run on the global batch).
"""

import tensorflow as tf

from official_electra.modeling.layers import elementwise_gradients


def global_sum(value):
  """Sums a per-replica scalar over replicas (identity outside a strategy)."""
  context = tf.distribute.get_replica_context()
  if context is None or context.num_replicas_in_sync == 1:
    return value
  return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def whole_batch_denominators(masked_weights, input_mask):
  """The global sums a loss over the whole batch divides by (`masked`:
  the masked slots, `tokens`: the real tokens), for micro-batches whose
  losses must add up to the whole batch's (`weighted_mean`'s
  `denominator`)."""
  return {
      "masked": global_sum(tf.reduce_sum(masked_weights)),
      "tokens": global_sum(tf.reduce_sum(tf.cast(input_mask, tf.float32))),
  }


def weighted_mean(per_item_loss, weights, denominator=None):
  """`sum(weights * loss) / sum(weights over all replicas)`, float32 scalar.

  `denominator`, when given, replaces the weights' global sum: the sum over
  a whole accumulated batch, of which `weights` are one micro-batch's (so
  that the micro-batches' losses add up to the whole batch's).
  """
  per_item_loss = tf.cast(per_item_loss, tf.float32)
  weights = tf.cast(weights, tf.float32)
  if denominator is None:
    denominator = global_sum(tf.reduce_sum(weights))
  # The original adds 1e-6 to the denominator; it also keeps an empty batch finite.
  return tf.reduce_sum(per_item_loss * weights) / (denominator + 1e-6)


def masked_lm_loss(logits, target_ids, weights, denominator=None):
  """Cross-entropy of the MLM prediction.

  Args:
    logits: float32 `[batch, N, vocab]`.
    target_ids: int `[batch, N]` original token ids.
    weights: float32 `[batch, N]`.
    denominator: see `weighted_mean`.

  Returns:
    (loss scalar, per-slot cross-entropy `[batch, N]`).
  """
  per_slot = elementwise_gradients.sparse_softmax_cross_entropy(
      tf.cast(logits, tf.float32), tf.cast(target_ids, tf.int32))
  return weighted_mean(per_slot, weights, denominator), per_slot


def replaced_token_detection_loss(logits, labels, weights, denominator=None):
  """Sigmoid cross-entropy of the discriminator.

  Args:
    logits: float32 `[batch, seq_len]`.
    labels: int `[batch, seq_len]`, 1 where the token was replaced.
    weights: float32 `[batch, seq_len]`.
    denominator: see `weighted_mean`.

  Returns:
    (loss scalar, per-token loss `[batch, seq_len]`).
  """
  per_token = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.cast(labels, tf.float32), logits=tf.cast(logits, tf.float32))
  return weighted_mean(per_token, weights, denominator), per_token


def copy_mechanism_loss(logits, copy_logits, input_ids, target_ids, weights,
                        denominator=None):
  """Negative log-likelihood of All-Tokens MLM with its copy mechanism.

  Clark et al. (2020), Section 3.2: `p(x_t) = D * 1[x_t = input_t] +
  (1 - D) * softmax(logits_t)[x_t]`, with `D = sigmoid(copy_logit_t)`. Computed
  in log space without a one-hot over the vocabulary.

  Args:
    logits: float32 `[batch, seq_len, vocab]`.
    copy_logits: float32 `[batch, seq_len]`.
    input_ids: int `[batch, seq_len]` the (corrupted) input ids.
    target_ids: int `[batch, seq_len]` the original ids.
    weights: float32 `[batch, seq_len]`.
    denominator: see `weighted_mean`.

  Returns:
    (loss scalar, per-token negative log-likelihood `[batch, seq_len]`).
  """
  softmax_nll = elementwise_gradients.sparse_softmax_cross_entropy(
      tf.cast(logits, tf.float32), tf.cast(target_ids, tf.int32))
  copy_logits = tf.cast(copy_logits, tf.float32)
  log_copy = tf.math.log_sigmoid(copy_logits)
  log_generate = tf.math.log_sigmoid(-copy_logits) - softmax_nll
  is_copy = tf.equal(tf.cast(input_ids, tf.int32), tf.cast(target_ids, tf.int32))
  log_likelihood = tf.where(
      is_copy, tf.reduce_logsumexp(tf.stack([log_copy, log_generate]), axis=0),
      log_generate)
  return (weighted_mean(-log_likelihood, weights, denominator),
          -log_likelihood)


def reinforce_loss(sample_log_probabilities, rewards, baseline_logits,
                   weights, denominator=None):
  """REINFORCE for a generator that maximises the discriminator's loss.

  Adversarial ELECTRA (Clark et al., 2020, Section 3.3 and Appendix F). Each
  masked slot t holds one sample `x_t ~ p_G(. | x_masked)` and gets the
  reward `R_t`: the discriminator's loss at its position (`-log D` if the
  sample equals the original, `-log(1 - D)` otherwise, `D` the probability
  of "original"). Under the paper's simplification (the discriminator's
  output at t depends on t's token and the unreplaced ones), the expected
  reward splits over the slots, and

      grad E[sum_t R_t] = E[sum_t grad log p_G(x_t) (R_t - b_t)]

  for any baseline `b_t` that does not depend on the sample. The surrogate
  returned, `-sum_t w_t (R_t - b_t) log p_G(x_t) / sum w`, with `R` and `b`
  held constant, has minus that estimate (per slot) as its gradient:
  minimising it ascends the reward.

  The baseline is the paper's `b_t = -log sigmoid(s_t)`, `s_t` the logit of
  a head on the generator's hidden state at t. The paper trains it "with a
  cross-entropy loss to match the reward"; we read that as the sigmoid
  cross-entropy of `sigmoid(s_t)` against `exp(-R_t)` (the probability the
  discriminator gives the right label), so that `b_t` follows the reward.

  Args:
    sample_log_probabilities: float32 `[batch, N]` `log p_G(x_t)` of each
      slot's sample (differentiable in the generator).
    rewards: float32 `[batch, N]` (any gradient is stopped).
    baseline_logits: float32 `[batch, N]` `s_t`.
    weights: float32 `[batch, N]` 1 at real slots.
    denominator: see `weighted_mean`.

  Returns:
    `((surrogate scalar, per-slot rewards), (baseline loss scalar, per-slot
    baseline cross-entropy))`.
  """
  rewards = tf.stop_gradient(tf.cast(rewards, tf.float32))
  baseline_logits = tf.cast(baseline_logits, tf.float32)
  baselines = -tf.math.log_sigmoid(baseline_logits)
  advantages = tf.stop_gradient(rewards - baselines)
  surrogate = weighted_mean(
      -advantages * tf.cast(sample_log_probabilities, tf.float32), weights,
      denominator)
  baseline_per_slot = tf.nn.sigmoid_cross_entropy_with_logits(
      labels=tf.exp(-rewards), logits=baseline_logits)
  return ((surrogate, rewards),
          (weighted_mean(baseline_per_slot, weights, denominator),
           baseline_per_slot))
