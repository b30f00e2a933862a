import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from textkit import slugify  # noqa: E402


class SlugifyTest(unittest.TestCase):
    def test_simple_title(self):
        self.assertEqual(slugify("Hello World"), "hello-world")

    def test_punctuation_and_spaces_collapse(self):
        self.assertEqual(slugify("Hello,  World!"), "hello-world")

    def test_accents_and_outer_spaces(self):
        self.assertEqual(slugify("  Crème brûlée "), "creme-brulee")

    def test_truncation_leaves_no_trailing_dash(self):
        self.assertEqual(slugify("aaaaaaaaaa bbb", max_length=11), "aaaaaaaaaa")

    def test_digits_kept(self):
        self.assertEqual(slugify("Top 10 tips (2024)"), "top-10-tips-2024")


if __name__ == "__main__":
    unittest.main()
