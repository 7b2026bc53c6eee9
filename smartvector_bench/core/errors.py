"""One error type for bad input, so entry points can print it cleanly and exit non-zero."""


class BenchError(ValueError):
    """Bad configuration or input. The message names the key or file (and line) and what is allowed."""
