"""``wordfreq FILE [--top N]``: the most frequent words of a text file, one ``word count`` per line."""

import argparse
import re
import sys
from collections import Counter

WORD = re.compile(r"[a-z']+")


def count_words(text: str) -> Counter:
    return Counter(WORD.findall(text.lower()))


def main(argv=None, out=None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="wordfreq")
    parser.add_argument("file")
    parser.add_argument("--top", type=int, default=10, help="how many words to print (default 10)")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as fh:
        counts = count_words(fh.read())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    for word, count in ranked[: args.top]:
        print(f"{word} {count}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
