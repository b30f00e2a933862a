import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from report import format_row, summary_line  # noqa: E402


class FormatTest(unittest.TestCase):
    def test_row(self):
        self.assertEqual(
            format_row("unit", 10, 2, 1, 3.25),
            "unit                 passed=10    failed=2     skipped=1     time=3.2s",
        )

    def test_summary_failed(self):
        rows = [("unit", 10, 2, 1, 3.0), ("e2e", 4, 1, 0, 9.0)]
        self.assertEqual(
            summary_line(rows),
            "FAILED: 2 suites, 3 failures (see the build log for the full list of failing tests)",
        )

    def test_summary_ok(self):
        self.assertTrue(summary_line([("unit", 1, 0, 0, 0.1)]).startswith("OK: 1 suites, 0 failures"))


if __name__ == "__main__":
    unittest.main()
