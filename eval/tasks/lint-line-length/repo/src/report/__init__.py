from .format import format_row, summary_line

__all__ = ["format_row", "summary_line"]
