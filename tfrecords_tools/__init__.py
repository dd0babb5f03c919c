"""Text corpus -> WordPiece vocabulary -> packed ELECTRA pretraining TFRecords."""

# Importing official_electra sets up a `python -m` program's quiet logs and
# Keras 2 before TensorFlow loads (its __init__); nothing to repeat here.
import official_electra  # pylint: disable=unused-import
