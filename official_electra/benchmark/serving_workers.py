"""The serving benchmark's worker processes: what a server runs per request.

`build_saved_model_server` loads the exports with TensorFlow and TF Text only
(`tf.saved_model.load`, then their signatures), as TF Serving does: nothing
of this project's code beyond this module is imported (the worker reports
what was). `build_huggingface_server` loads the Hugging Face twins of the
same weights with transformers' tokenizer and models (PyTorch CPU).

Both answer the same payloads:
  {"op": "time", "case": name, "variant": v, "rows": [[row, ...], ...]}:
    one call per inner list (the examples of one request), each timed from
    Python inputs to numpy outputs; returns the seconds of each call;
  {"op": "outputs", ...one "rows" list...}: `(probabilities, input_mask)`
    of one call, to check the two compute the same;
  {"op": "info"}: `{"load_seconds": ...}`.
A case (see `serving._cases`) names its export (`group`: `classifier_single`,
`classifier_pair` or `discriminator`), the inputs (single sentences or
pairs) and the signature (raw text or token ids). Token ids come
precomputed (`settings["token_ids"]`), packed as the text signatures pack
them.
"""

import os
import time

# The Hugging Face names of the token-id inputs.
_HF_NAMES = {"input_word_ids": "input_ids", "input_mask": "attention_mask",
             "input_type_ids": "token_type_ids"}


def _handler(run, load_seconds):
  """Answers the payloads of the module docstring with `run(case, variant,
  rows) -> (probabilities, input_mask)`."""

  def handle(payload):
    if payload["op"] == "info":
      return {"load_seconds": load_seconds}
    if payload["op"] == "outputs":
      return run(payload["case"], payload["variant"], payload["rows"])
    seconds = []
    for rows in payload["rows"]:
      start = time.perf_counter()
      run(payload["case"], payload["variant"], rows)
      seconds.append(time.perf_counter() - start)
    return seconds

  return handle


def build_saved_model_server(settings):
  """Our export: `tf.saved_model.load` and signature calls.

  Args:
    settings: `exports`, `{group: SavedModel folder}`; `cases`, `{name:
      {"group", "signature", "text_keys", "inputs", "output"}}` (`text_keys`
      None for the token-id signatures); `texts` and `token_ids` by inputs
      kind.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import tensorflow_text  # pylint: disable=g-import-not-at-top,unused-import
  # (registers the tokenizer's ops, as the TF Serving binary does)

  start = time.perf_counter()
  loaded = {group: tf.saved_model.load(export_dir)
            for group, export_dir in settings["exports"].items()}
  load_seconds = time.perf_counter() - start
  cases = settings["cases"]
  signatures = {name: loaded[case["group"]].signatures[case["signature"]]
                for name, case in cases.items()}

  def run(name, variant, rows):
    del variant  # One way to call a signature.
    case = cases[name]
    if case["text_keys"]:
      texts = settings["texts"][case["inputs"]]
      inputs = {key: tf.constant([texts[row][column] for row in rows])
                for column, key in enumerate(case["text_keys"])}
    else:
      inputs = {key: tf.constant(values[rows]) for key, values in
                settings["token_ids"][case["inputs"]].items()}
    outputs = signatures[name](**inputs)
    mask = outputs.get("input_mask", inputs.get("input_mask"))
    return (outputs[case["output"]].numpy(),
            None if mask is None else mask.numpy())

  return _handler(run, load_seconds)


def build_huggingface_server(settings):
  """transformers' tokenizer and ELECTRA model on the same weights.

  Args:
    settings: `hf_dir` (an `ElectraForPreTraining` directory from our
      export), `vocab_file`, `seq_len`, `heads` (`{group: (kernel, bias)}`
      of our classifiers' heads, None for the discriminator), `cases`,
      `texts`, `token_ids`. A case's variant is the tokenizer's `padding`:
      `max_length` (`seq_len`, as our text signatures pack) or `longest`.
  """
  from official_electra.benchmark import workers  # pylint: disable=g-import-not-at-top
  workers.prepare_torch_environment()
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top

  transformers.logging.set_verbosity_error()
  torch.set_num_threads(os.cpu_count())
  start = time.perf_counter()
  tokenizer = transformers.ElectraTokenizerFast(
      vocab_file=settings["vocab_file"], do_lower_case=True)
  models = {group: _huggingface_model(torch, transformers,
                                      settings["hf_dir"], head)
            for group, head in settings["heads"].items()}
  load_seconds = time.perf_counter() - start
  cases = settings["cases"]

  def run(name, variant, rows):
    case = cases[name]
    if case["text_keys"]:
      texts = settings["texts"][case["inputs"]]
      inputs = dict(tokenizer(*[[texts[row][column] for row in rows]
                                for column in range(len(case["text_keys"]))],
                              padding=variant, truncation=True,
                              max_length=settings["seq_len"],
                              return_tensors="pt"))
    else:
      inputs = {_HF_NAMES[key]: torch.from_numpy(values[rows]).long()
                for key, values in
                settings["token_ids"][case["inputs"]].items()}
    model, activation = models[case["group"]]
    with torch.inference_mode():
      probabilities = activation(model(**inputs).logits)
    return probabilities.numpy(), inputs["attention_mask"].numpy()

  return _handler(run, load_seconds)


def _huggingface_model(torch, transformers, hf_dir, head):
  """`(model, activation)`: `ElectraForPreTraining` and sigmoid when `head`
  is None, else `ElectraForSequenceClassification` with our head, softmax."""
  if head is None:
    model = transformers.ElectraForPreTraining.from_pretrained(hf_dir)
    activation = torch.sigmoid
  else:
    kernel, bias = head
    model = transformers.ElectraForSequenceClassification.from_pretrained(
        hf_dir, num_labels=kernel.shape[1])
    model.classifier = _our_head(torch, kernel, bias)
    activation = lambda logits: torch.softmax(logits, dim=-1)
  return model.eval(), activation


def _our_head(torch, kernel, bias):
  """Our classification head in PyTorch: `[CLS]` -> dense (dropout is off in
  serving). Hugging Face's `ElectraClassificationHead` puts a hidden x hidden
  dense layer and GELU before the output layer; ours, as the original, does
  not, so its weights replace that head for the two to compute the same."""

  class ClassifierHead(torch.nn.Module):

    def __init__(self):
      super().__init__()
      self.dense = torch.nn.Linear(*kernel.shape)
      with torch.no_grad():
        self.dense.weight.copy_(torch.from_numpy(kernel.T))
        self.dense.bias.copy_(torch.from_numpy(bias))

    def forward(self, sequence_output):
      return self.dense(sequence_output[:, 0])

  return ClassifierHead()
