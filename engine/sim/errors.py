"""The simulator's user-facing error."""
from engine.errors import KneepointError


class SimError(KneepointError):
    """Bad simulator input (workload, trace, service spec, run length); the message names the field."""
