"""The exit codes every tool shares, the two failures that are not a
regression (bad input: 2; the tool could not run: 3), and one-line messages."""

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_TOOL = 0, 1, 2, 3
# Could not tell: rows that ran beside other load could not be judged, and
# nothing was slower or wrong. CI must not pass a run that measured nothing.
EXIT_INCONCLUSIVE = 5


class BadInput(Exception):
    pass


class ToolError(Exception):
    """The tool itself cannot run (a missing library): exit 3, never 1."""


def one_line(text):
    return str(text).strip().splitlines()[0] if str(text).strip() else ""
