"""The pretraining steps `benchmark/pretrain.py` times: ours, Model Garden's
and Hugging Face's, on the same shapes, batch, loss and clipping (that
module's docstring says how each is built and what differs).

Each `build_*` returns a `step()` that runs one training step and returns
its loss; the benchmark's worker process builds one.
"""

import os

VOCAB_SIZE = 30522
MASK_ID, CLS_ID, SEP_ID, PAD_ID = 103, 101, 102, 0
SHAPES = {  # discriminator config overrides, generator fraction
    "small": (dict(), 0.25),
    "base": (dict(embedding_size=768, hidden_size=768, num_attention_heads=12,
                  intermediate_size=3072), 1 / 3),
    # gin/tiny.gin's shapes: a quick check that the benchmark itself runs.
    "tiny": (dict(embedding_size=32, hidden_size=64, num_layers=2,
                  num_attention_heads=2, intermediate_size=128,
                  max_position_embeddings=128), 0.5),
}


def configs(model):
  """`(discriminator, generator)` `EncoderConfig`s of a `SHAPES` name."""
  from official_electra.modeling import encoder_config  # pylint: disable=g-import-not-at-top
  overrides, fraction = SHAPES[model]
  discriminator = encoder_config.EncoderConfig(**overrides)
  return discriminator, discriminator.scaled(fraction)


def masked_slots(seq_len):
  """Masked slots per sequence at the paper's 15%."""
  from official_electra.modeling.layers import dynamic_masking  # pylint: disable=g-import-not-at-top
  return dynamic_masking.max_predictions_per_seq(seq_len, mask_prob=0.15)


def token_batch(batch_size, seq_len):
  """A fixed int32 `[batch_size, seq_len]` batch of token ids."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  ids = np.random.default_rng(0).integers(
      1000, VOCAB_SIZE, size=(batch_size, seq_len)).astype(np.int32)
  ids[:, 0] = CLS_ID
  ids[:, seq_len // 2] = SEP_ID
  ids[:, -1] = SEP_ID
  return ids


def patch_model_garden_sampler():
  """Lets Model Garden's ElectraPretrainer train under a mixed policy.

  Its `sample_from_softmax` adds float32 Gumbel noise to the generator's
  logits, which are in the compute dtype under `mixed_bfloat16` or
  `mixed_float16`, and the step fails to build (`AddV2` of float32 and
  bfloat16). Casting the logits to float32 first is the smallest fix a user
  would make, and what our sampler does; under float32 it changes nothing.
  Replaces the module's function (the pretrainer looks it up at call time);
  idempotent.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling.models import electra_pretrainer as garden  # pylint: disable=g-import-not-at-top
  sample = garden.sample_from_softmax
  if getattr(sample, "casts_logits_to_float32", False):
    return

  def sample_in_float32(logits, disallow=None):
    return sample(tf.cast(logits, tf.float32), disallow=disallow)

  sample_in_float32.casts_logits_to_float32 = True
  garden.sample_from_softmax = sample_in_float32


def build_tensorflow(kind, settings):
  """A `step()` running one TF training step of `kind` (ours/model_garden);
  `settings`: the benchmark's `model`, `batch_size`, `seq_len`,
  `mixed_precision` and `jit_compile`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tf_keras  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import model_config  # pylint: disable=g-import-not-at-top
  from official_electra.modeling import objectives  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.layers import dynamic_masking  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.models import electra_model  # pylint: disable=g-import-not-at-top
  from official_electra.modeling.models import electra_pretrainer  # pylint: disable=g-import-not-at-top
  from official_electra.optimization import optimizer_factory  # pylint: disable=g-import-not-at-top

  tf_keras.mixed_precision.set_global_policy(settings["mixed_precision"])
  if kind == "ours":
    # As official_electra.train: dropout draws from checkpointed generators.
    tf_keras.utils.set_random_seed(0)
    tf_keras.backend.experimental.enable_tf_random_generator()
  discriminator_config, generator_config = configs(settings["model"])
  num_slots = masked_slots(settings["seq_len"])
  ids = tf.constant(token_batch(settings["batch_size"], settings["seq_len"]))
  inputs = {"input_word_ids": ids, "input_mask": tf.ones_like(ids),
            "input_type_ids": tf.zeros_like(ids)}
  optimizer = optimizer_factory.create_optimizer(
      "adamw", peak_learning_rate=5e-4, num_train_steps=10**6,
      num_warmup_steps=10**4)
  if kind == "ours":
    # ELECTRA's towers on one embedding block, and its heads.
    model = electra_pretrainer.ElectraPretrainer(
        electra_model.ElectraModel.from_config(model_config.ModelConfig(
            discriminator=discriminator_config, generator=generator_config,
            heads=objectives.get("electra").heads(True))),
        mask_token_id=MASK_ID, excluded_token_ids=[CLS_ID, SEP_ID, PAD_ID],
        max_predictions_per_seq=num_slots, seed=0)
    model.compile(optimizer=optimizer, jit_compile=settings["jit_compile"])
    iterator = iter(tf.data.Dataset.from_tensors(inputs).repeat())
    train_function = model.make_train_function()
    return lambda: float(train_function(iterator)["loss"])

  from official.modeling import tf_utils  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import models  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import networks  # pylint: disable=g-import-not-at-top

  if settings["mixed_precision"] != "float32":
    patch_model_garden_sampler()

  def bert_encoder(config, embedding_layer=None):
    return networks.BertEncoder(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size,
        num_layers=config.num_layers,
        num_attention_heads=config.num_attention_heads,
        inner_dim=config.intermediate_size, max_sequence_length=512,
        type_vocab_size=2, embedding_width=config.embedding_size,
        embedding_layer=embedding_layer, dict_outputs=True)

  discriminator = bert_encoder(discriminator_config)
  generator = bert_encoder(generator_config,
                           discriminator.get_embedding_layer())
  model = models.ElectraPretrainer(
      generator_network=generator, discriminator_network=discriminator,
      vocab_size=VOCAB_SIZE, num_classes=2, num_token_predictions=num_slots,
      mlm_activation=tf_utils.get_activation("gelu"),
      mlm_initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))
  # Model Garden masks in the input pipeline: precompute one static masking.
  masking = dynamic_masking.DynamicMasking(MASK_ID, [CLS_ID, SEP_ID, PAD_ID],
                                           num_slots)(
                                               ids, inputs["input_mask"],
                                               seed=tf.constant([0, 1]))
  # Integer weights: under a mixed policy Keras would cast float inputs to the
  # compute dtype, which Model Garden's ElectraPretrainer cannot add to float32.
  garden_inputs = dict(inputs, input_word_ids=masking["masked_input_ids"],
                       masked_lm_positions=masking["masked_positions"],
                       masked_lm_ids=masking["masked_ids"],
                       masked_lm_weights=tf.cast(masking["masked_weights"],
                                                 tf.int32))

  @tf.function(jit_compile=settings["jit_compile"])
  def train_step(batch):
    with tf.GradientTape() as tape:
      outputs = model(batch, training=True)
      mlm = tf_keras.losses.sparse_categorical_crossentropy(
          batch["masked_lm_ids"], tf.cast(outputs["lm_outputs"], tf.float32),
          from_logits=True)
      weights = tf.cast(batch["masked_lm_weights"], tf.float32)
      mlm_loss = tf.reduce_sum(mlm * weights) / tf.reduce_sum(weights)
      rtd = tf.nn.sigmoid_cross_entropy_with_logits(
          logits=tf.cast(outputs["disc_logits"], tf.float32),
          labels=tf.cast(outputs["disc_label"], tf.float32))
      loss = mlm_loss + 50.0 * tf.reduce_mean(rtd)
    gradients = tape.gradient(loss, model.trainable_variables)
    gradients, _ = tf.clip_by_global_norm(gradients, 1.0)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables))
    return loss

  return lambda: float(train_step(garden_inputs))


def build_huggingface(settings):
  """A `step()` running one PyTorch ELECTRA training step (transformers)."""
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  torch.manual_seed(0)
  torch.set_num_threads(os.cpu_count())
  discriminator_config, generator_config = configs(settings["model"])

  def hf_config(config):
    return transformers.ElectraConfig(
        vocab_size=config.vocab_size, embedding_size=config.embedding_size,
        hidden_size=config.hidden_size, num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_attention_heads,
        intermediate_size=config.intermediate_size)

  generator = transformers.ElectraForMaskedLM(hf_config(generator_config))
  discriminator = transformers.ElectraForPreTraining(
      hf_config(discriminator_config))
  generator.electra.embeddings = discriminator.electra.embeddings
  generator.generator_lm_head.weight = (
      discriminator.electra.embeddings.word_embeddings.weight)
  parameters = {id(p): p for p in list(generator.parameters()) +
                list(discriminator.parameters())}.values()
  optimizer = torch.optim.AdamW(parameters, lr=5e-4, eps=1e-6,
                                weight_decay=0.01)
  ids = torch.from_numpy(token_batch(settings["batch_size"],
                                      settings["seq_len"])).long()
  batch_size, seq_len = ids.shape
  num_slots = masked_slots(seq_len)
  rows = torch.arange(batch_size)[:, None]
  autocast = settings["mixed_precision"] == "mixed_bfloat16"

  def step():
    candidates = torch.rand(batch_size, seq_len)
    candidates[:, 0] = -1
    candidates[ids == SEP_ID] = -1
    positions = candidates.topk(num_slots, dim=1).indices
    originals = ids[rows, positions]
    masked = ids.clone()
    keep = torch.rand(batch_size, num_slots) < 0.15
    masked[rows, positions] = torch.where(keep, originals,
                                          torch.full_like(originals, MASK_ID))
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
      hidden = generator.electra(input_ids=masked)[0][rows, positions]
      logits = generator.generator_lm_head(
          generator.generator_predictions(hidden)).float()
      mlm_loss = torch.nn.functional.cross_entropy(
          logits.reshape(-1, logits.shape[-1]), originals.reshape(-1))
      with torch.no_grad():
        gumbel = -torch.log(-torch.log(torch.rand_like(logits).clamp_min(1e-20)))
        sampled = (logits + gumbel).argmax(-1)
      corrupted = masked.clone()
      corrupted[rows, positions] = sampled
      labels = (corrupted != ids).float()
      disc_logits = discriminator(input_ids=corrupted).logits.float()
      rtd_loss = torch.nn.functional.binary_cross_entropy_with_logits(
          disc_logits, labels)
      loss = mlm_loss + 50.0 * rtd_loss
    loss.backward()
    torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return float(loss)

  return step
