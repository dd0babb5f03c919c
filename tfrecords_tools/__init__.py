"""Text corpus -> WordPiece vocabulary -> packed ELECTRA pretraining TFRecords."""

from official_electra import _program_keras
from official_electra import _program_logs

_program_logs.quiet_tensorflow_for_programs()
_program_keras.use_keras_2_for_programs()
