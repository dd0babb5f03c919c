"""ELECTRA in TensorFlow 2 / Keras (Clark et al., 2020)."""

from official_electra import _program_logs

_program_logs.quiet_tensorflow_for_programs()
