"""A run that loaded the model ends silently (issues 22, 45): no traceback from llama-cpp-python's finalizers and no
``ResourceWarning`` for its ``/dev/null`` files at interpreter shutdown. Needs the real model (the ``model_path`` fixture fails without it, as conftest.py says)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "mini-swe-agent" / "django__django-11163.traj.json"

# Both decoders (the forced one runs a worker thread on the context), and the compressors kept alive until the
# interpreter tears its modules down (as a test session's fixture cache or a module-level default may keep
# them; an underscore name in sys is among the last to go): left to that teardown, llama-cpp-python's __del__
# finds the globals of its modules and of contextlib gone and prints a traceback (before the fix, this script
# printed "AttributeError: 'NoneType' object has no attribute 'exc_info'" from llama.py's __del__).
SCRIPT = """
import sys
from offline_compress import Compressor
from offline_compress.formats import load_history

history = load_history(sys.argv[1])
kept = []
for decoder in ("outlines", "forced"):
    compressor = Compressor("default", llama={"decoder": decoder})
    print(decoder, len(compressor.compress(history).to_json()))
    kept.append(compressor)
sys._offline_compress_kept = kept
"""


def test_a_run_with_the_model_exits_without_a_traceback(model_path: Path) -> None:
    env = {**os.environ, "OFFLINE_COMPRESS_MODEL_DIR": str(model_path.parent), "TRANSFORMERS_VERBOSITY": "error"}
    done = subprocess.run(
        [sys.executable, "-W", "always::ResourceWarning", "-c", SCRIPT, str(FIXTURE)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line.split()[0] for line in done.stdout.splitlines()] == ["outlines", "forced"], done.stdout
    # nothing printed at exit: llama-cpp-python's /dev/null files closed too (issue 45: two ResourceWarnings)
    for marker in ("Traceback", "TypeError", "Exception ignored", "AttributeError", "ResourceWarning"):
        assert marker not in done.stderr, done.stderr[-2000:]
