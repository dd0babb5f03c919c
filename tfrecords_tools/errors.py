"""The one exception class of tfrecords_tools."""


class BuildError(Exception):
  """A problem a user can fix (bad input, flags, output dir); one-line message."""
