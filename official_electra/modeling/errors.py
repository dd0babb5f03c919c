"""The modeling tier's user-facing error (every entry point reports it as one
`error:` line)."""


class CheckpointError(ValueError):
  """A checkpoint or its model config is missing, unreadable or does not fit
  the model; the message names the path and the fix."""
