"""The simulator's user-facing error."""


class SimError(ValueError):
    """Bad simulator input (workload, trace, service spec, run length); the message names the field."""
