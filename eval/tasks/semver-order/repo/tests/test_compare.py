import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from versions import compare, latest, parse  # noqa: E402


class VersionTest(unittest.TestCase):
    def test_parse_pads_missing_parts(self):
        self.assertEqual(parse("1.2"), (1, 2, 0))
        self.assertEqual(parse("v3"), (3, 0, 0))

    def test_parse_rejects_garbage(self):
        with self.assertRaises(ValueError):
            parse("1.x")

    def test_numeric_order(self):
        self.assertEqual(compare("1.10.0", "1.9.0"), 1)
        self.assertEqual(compare("1.9.0", "1.10.0"), -1)

    def test_equal_after_padding(self):
        self.assertEqual(compare("v2.0", "2.0.0"), 0)

    def test_latest(self):
        self.assertEqual(latest(["1.2.0", "1.10.0", "1.9.3"]), "1.10.0")


if __name__ == "__main__":
    unittest.main()
