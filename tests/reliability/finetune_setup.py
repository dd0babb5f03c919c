"""A tiny vocabulary and gin file for runs of `python -m official_electra.finetune`."""

_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def write_tiny_finetune_config(root, words, **hyperparameters):
  """Writes `root/vocab.txt` (specials + `words`) and `root/tiny.gin`.

  The gin file includes the GLUE recipe with a one-layer, 16-wide encoder;
  each keyword becomes a `glue_hyperparameters.<name> = <value>` binding.
  """
  (root / "vocab.txt").write_text(
      "\n".join([*_SPECIAL_TOKENS, *words]) + "\n", encoding="utf-8")
  bindings = "".join(f"glue_hyperparameters.{name} = {value}\n"
                     for name, value in hyperparameters.items())
  (root / "tiny.gin").write_text(f"""include 'gin/glue/recipe.gin'
glue_encoder.vocab_size = {len(_SPECIAL_TOKENS) + len(words)}
glue_encoder.embedding_size = 16
glue_encoder.hidden_size = 16
glue_encoder.num_layers = 1
glue_encoder.num_attention_heads = 1
glue_encoder.intermediate_size = 32
glue_encoder.max_position_embeddings = 16
{bindings}""")
