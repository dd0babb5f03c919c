"""Keras 2 for the `python -m` programs, by TensorFlow's own switch.

The project runs on Keras 2 through `tf_keras`. TensorFlow reads
`TF_USE_LEGACY_KERAS` when it loads: set, `tf.keras` is that same Keras 2
(so a layer another library builds through `tf.keras`, tensorflow-text's
for one, is a layer our models can hold), and TensorFlow does not import
Keras 3 at all, which took about 1.7 of the 7 CPU-seconds of a program's
start (`python -m official_electra.train` stopped at a missing gin file,
mean of 4 pairs on a shared Xeon, 2026-12-07). A program sets it unless the
environment already holds a value; importing the package as a library
changes nothing (`tf.keras` stays what the user's environment makes it).

This runs when the package is imported, before TensorFlow is.
"""

import os

from official_electra import _program_logs


def use_keras_2_for_programs():
  if _program_logs.running_as_program():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
