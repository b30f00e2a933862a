import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rows import split_row  # noqa: E402


class SplitRowTest(unittest.TestCase):
    def test_plain_fields(self):
        self.assertEqual(split_row("a,b,c"), ["a", "b", "c"])

    def test_empty_fields(self):
        self.assertEqual(split_row("a,,b"), ["a", "", "b"])
        self.assertEqual(split_row(""), [""])

    def test_quoted_field_with_separator(self):
        self.assertEqual(split_row('a,"b,c",d'), ["a", "b,c", "d"])

    def test_doubled_quotes(self):
        self.assertEqual(split_row('"say ""hi""",x'), ['say "hi"', "x"])

    def test_other_separator(self):
        self.assertEqual(split_row('a;"b;c"', sep=";"), ["a", "b;c"])

    def test_unterminated_quote(self):
        with self.assertRaises(ValueError):
            split_row('a,"b')


if __name__ == "__main__":
    unittest.main()
