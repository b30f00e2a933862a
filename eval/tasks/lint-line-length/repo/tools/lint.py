"""``python3 tools/lint.py DIR...``: report Python lines longer than lint.cfg's max_line_length
and lines with trailing whitespace; exit status 1 if any."""

import configparser
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv) -> int:
    config = configparser.ConfigParser()
    config.read(ROOT / "lint.cfg")
    limit = config.getint("lint", "max_line_length")
    problems = []
    for folder in argv or ["src"]:
        for path in sorted(Path(folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if len(line) > limit:
                    problems.append(f"{path}:{number}: line too long ({len(line)} > {limit})")
                if line != line.rstrip():
                    problems.append(f"{path}:{number}: trailing whitespace")
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
