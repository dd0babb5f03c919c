"""Parity of our pretraining with an independent PyTorch implementation of
the authors' procedure (`reference.py`): the step-exact check's pieces and
the `python -m official_electra.parity` command."""
