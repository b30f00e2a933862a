import io
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wordfreq import main  # noqa: E402

TEXT = "the cat and the dog and the bird. A dog!"


def run(*args):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "text.txt"
        path.write_text(TEXT, encoding="utf-8")
        out = io.StringIO()
        status = main([str(path), *args], out=out)
        return status, out.getvalue().splitlines()


class WordfreqTest(unittest.TestCase):
    def test_ranking(self):
        status, lines = run("--top", "3")
        self.assertEqual(status, 0)
        self.assertEqual(lines, ["the 3", "and 2", "dog 2"])

    def test_min_count_filters_rare_words(self):
        status, lines = run("--min-count", "2")
        self.assertEqual(status, 0)
        self.assertEqual(lines, ["the 3", "and 2", "dog 2"])

    def test_min_count_with_top(self):
        status, lines = run("--min-count", "2", "--top", "1")
        self.assertEqual(lines, ["the 3"])

    def test_min_count_must_be_positive(self):
        with self.assertRaises(SystemExit):
            run("--min-count", "0")


if __name__ == "__main__":
    unittest.main()
