"""ELECTRA in TensorFlow 2 / Keras (Clark et al., 2020).

The Python API (docs/python_api.md), for your own `tf_keras` code:

    import official_electra as electra
    encoder = electra.load_encoder("runs/quickstart/model")
    preprocessor = electra.load_preprocessor("runs/quickstart/model")
    classifier = electra.ElectraClassifier(encoder, num_outputs=2)

Loading a checkpoint folder: `load_encoder`, `load_preprocessor`,
`load_classifier`. Models and layers: `ElectraEncoder`, `ElectraPreprocessor`,
`ElectraClassifier`, `encoder_inputs` (for a head of your own). Training:
`finetuning_optimizer`. Saving and serving: `save_encoder`,
`save_classifier`, `export_saved_model`. Errors: `CheckpointError`,
`UserError` (the base of every error a user can cause). The names are
imported on first use, so `import official_electra` stays cheap.
"""

import importlib

from official_electra import _program_keras
from official_electra import _program_logs

_program_logs.quiet_tensorflow_for_programs()
_program_keras.use_keras_2_for_programs()

# Public name -> the module that defines it.
_PUBLIC_NAMES = {
    "load_encoder": "official_electra.keras_api.models",
    "load_preprocessor": "official_electra.keras_api.preprocessor",
    "load_classifier": "official_electra.keras_api.models",
    "ElectraEncoder": "official_electra.modeling.networks.electra_encoder",
    "ElectraPreprocessor": "official_electra.keras_api.preprocessor",
    "ElectraClassifier": "official_electra.modeling.models.electra_classifier",
    "encoder_inputs": "official_electra.keras_api.models",
    "finetuning_optimizer": "official_electra.keras_api.models",
    "save_encoder": "official_electra.keras_api.models",
    "save_classifier": "official_electra.keras_api.models",
    "export_saved_model": "official_electra.keras_api.models",
    "CheckpointError": "official_electra.modeling.errors",
    "UserError": "official_electra.errors",
}

__all__ = sorted(_PUBLIC_NAMES)


def __getattr__(name):
  if name not in _PUBLIC_NAMES:
    raise AttributeError(f"module 'official_electra' has no attribute {name!r}")
  value = getattr(importlib.import_module(_PUBLIC_NAMES[name]), name)
  globals()[name] = value
  return value


def __dir__():
  return sorted(set(globals()) | set(__all__))
