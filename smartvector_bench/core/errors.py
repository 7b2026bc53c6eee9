"""One error type for bad input, so entry points can print it cleanly and exit non-zero."""


class BenchError(ValueError):
    """Bad configuration or input. The message names the key or file (and line) and what is allowed."""


class BenchProblems(BenchError):
    """Several problems of one input found in one pass (every problem of a dataset's manifest.json), so a user
    fixes them all at once instead of meeting them one rerun at a time. The message is the one problem's line,
    or a heading and one indented line per problem (each naming its file, line and fix); entry points print
    those lines as they are (:func:`smartvector_bench.core.cli_errors.shown`)."""

    def __init__(self, heading: str, problems: list[str]):
        self.problems = tuple(problems)
        text = problems[0] if len(problems) == 1 else heading + "".join(f"\n  {p}" for p in problems)
        super().__init__(text)
