"""The modeling tier's user-facing error (every entry point reports it as one
`error:` line), beside the shared `UserError` and `first_line`."""

from official_electra.errors import first_line
from official_electra.errors import UserError


class CheckpointError(UserError):
  """A checkpoint or its model config is missing, unreadable or does not fit
  the model; the message names the path and the fix."""
