"""``python -m offline_compress.cli``."""

import sys

from . import main

sys.exit(main())
