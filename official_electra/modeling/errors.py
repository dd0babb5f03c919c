"""The modeling tier's user-facing error (every entry point reports it as one
`error:` line)."""

from official_electra.errors import UserError


def first_line(error):
  """The first line of an exception's message (its type name when empty)."""
  text = str(error).strip()
  return text.splitlines()[0] if text else type(error).__name__


class CheckpointError(UserError):
  """A checkpoint or its model config is missing, unreadable or does not fit
  the model; the message names the path and the fix."""
