"""Checkpoint conversion: the original TF1 checkpoints and Hugging Face."""
