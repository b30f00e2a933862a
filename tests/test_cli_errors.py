"""The CLI's own errors in one line (issue 50, and the CLI part of issue 45): an output that cannot be written, a
lone surrogate in what ``restore`` / ``archive export`` write, a bug of ours. Each case runs the CLI in its own
process: exit status 2, one line on stderr that says what, where and why, no traceback, no partial file."""

from __future__ import annotations

import errno
import gzip
import json
import os
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from offline_compress.archive.store import Archive
from offline_compress.files import OutputError, write_atomic

FIXTURES = Path(__file__).parent / "fixtures"
MINI = FIXTURES / "mini-swe-agent" / "github_issue.traj.json"
LONE = re.compile("[\ud800-\udfff]")


def cli(*argv: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "offline_compress.cli", *map(str, argv)], capture_output=True, timeout=120, env=env
    )


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    """The single line of stderr of a CLI run that failed as it should: exit status 2, no traceback."""
    err = done.stderr.decode("utf-8")
    assert done.returncode == 2 and "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("offline-compress: error: "), err
    return lines[0]


def partial_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".partial")]


# ------------------------------------------------------------------------------------------ outputs that fail


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder in which no file can be made, even by root (for whom a chmod-ed folder is still writable): /sys,
    whose folders refuse new files, for root; a folder without write permission for anyone else."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    try:
        fd, probe = tempfile.mkstemp(dir="/sys")
    except OSError:
        yield Path("/sys")
        return
    os.close(fd)
    os.unlink(probe)
    pytest.skip("/sys accepts new files here: no folder refuses root")


def test_a_folder_given_to_o_is_refused_by_name(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "kept.json").write_text("{}")
    line = one_error_line(cli("compress", MINI, "-o", folder))
    assert line == f"offline-compress: error: cannot write {folder}: is a folder (give the path of a file)"
    assert sorted(p.name for p in folder.iterdir()) == ["kept.json"]


@pytest.mark.parametrize("sub", ["", "sub/"], ids=["in-it", "in-a-folder-to-make"])
def test_a_read_only_folder_is_one_line(read_only_folder, sub):
    out = read_only_folder / f"{sub}offline-compress-test-out.json"
    line = one_error_line(cli("compress", MINI, "-o", out))
    assert line.startswith(f"offline-compress: error: cannot write {out}: ")
    why = line.removeprefix(f"offline-compress: error: cannot write {out}: ")
    assert why.split(" (in ")[0] in {os.strerror(errno.EACCES), os.strerror(errno.EPERM), os.strerror(errno.EROFS)}
    assert why.endswith(f" (in {read_only_folder})") == bool(sub)  # the folder that refused the new one
    assert not out.exists() and (not sub or not out.parent.exists())


@pytest.mark.parametrize("under", ["afile/out.json", "afile/sub/out.json"])
def test_a_file_where_a_folder_must_be_is_one_line(tmp_path, under):
    (tmp_path / "afile").write_text("kept")
    out = tmp_path / under
    line = one_error_line(cli("compress", MINI, "-o", out))
    assert line == f"offline-compress: error: cannot write {out}: {tmp_path / 'afile'} is a file, not a folder"
    assert (tmp_path / "afile").read_text() == "kept" and sorted(tmp_path.iterdir()) == [tmp_path / "afile"]


def test_a_write_that_fails_after_the_work_is_one_line():
    """/dev/full takes the output in place (a device is not replaced) and fails only when written."""
    done = cli("compress", MINI, "-o", "/dev/full")
    err = done.stderr.decode("utf-8")
    assert done.returncode == 2 and "Traceback" not in err, err
    errors = [line for line in err.splitlines() if "error" in line]
    assert errors == [f"offline-compress: error: cannot write /dev/full: {os.strerror(errno.ENOSPC)}"], err
    assert err.splitlines()[-1] == errors[0]  # after the progress lines of the compression


def test_write_atomic_says_what_where_why_and_leaves_nothing(tmp_path, read_only_folder, monkeypatch):
    """The library's writer, for the cases the CLI checks up front (a file or a folder can change in between)."""
    (tmp_path / "afile").write_text("kept")
    cases = {
        tmp_path: "is a folder",
        tmp_path / "afile" / "sub" / "x.json": f"{tmp_path / 'afile'} is a file, not a folder",
        read_only_folder / "x.json": "",
        read_only_folder / "sub" / "x.json": f"(in {read_only_folder})",
    }
    for path, why in cases.items():
        with pytest.raises(OutputError, match=re.escape(f"cannot write {path}: ")) as raised:
            write_atomic(path, "{}")
        assert why in str(raised.value) and isinstance(raised.value, OSError)
    # A write that fails half-way (a full disk): the old file is kept, no temporary file is left.
    out = tmp_path / "out.json"
    out.write_text("old")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError, match=f"cannot write {re.escape(str(out))}: No space left on device"):
        write_atomic(out, "new")
    assert out.read_text() == "old" and not partial_files(tmp_path)


def test_batch_into_a_file_or_a_read_only_folder_is_one_line(tmp_path, read_only_folder):
    afile = tmp_path / "afile"
    afile.write_text("kept")
    line = one_error_line(cli("batch", MINI, "--out", afile))
    assert line == f"offline-compress: error: cannot write into {afile}: {afile} is a file, not a folder"
    out = read_only_folder / "offline-compress-test-batch"
    line = one_error_line(cli("batch", MINI, "--out", out))
    assert line.startswith(f"offline-compress: error: cannot write into {out}: ") and not out.exists()


# ------------------------------------------------------------------------------------------ lone surrogates


def documented(text: str) -> bytes:
    """What the CLI documents for JSON text the API gives: UTF-8, each lone surrogate as its JSON escape."""
    return LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


@pytest.fixture
def surrogate_archive(tmp_path):
    """An archive of a history cut inside emoji (lone surrogates, high and low), with other text beside them."""
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "cut \ud83d here, é and 😀 whole, \udc00 alone"},
        {"role": "assistant", "content": "a backslash-u as text: \\ud83d, and a cut \ud83d"},
        {"role": "user", "content": "kept"},
    ]
    db = tmp_path / "a.sqlite3"
    with Archive(db) as archive:
        archive.record_compaction("s", history, head=1, cut=3, reason="manual", summary_json="{}")
        restored = archive.restore(1)
        exported = list(archive.export_jsonl())
    assert restored == history  # the API restores it exactly
    return db, restored, exported


@pytest.mark.parametrize("encoding", [None, "ascii"], ids=["default", "PYTHONIOENCODING=ascii"])
def test_restore_writes_exactly_what_the_api_restores(surrogate_archive, tmp_path, encoding):
    db, restored, _ = surrogate_archive
    env = {**os.environ, **({"PYTHONIOENCODING": encoding} if encoding else {})}
    expected = documented(json.dumps(restored, ensure_ascii=False, indent=1) + "\n")
    assert b"\\ud83d" in expected and "é".encode() in expected
    done = cli("restore", db, "--compaction", "1", env=env)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert done.stdout == expected
    assert json.loads(done.stdout.decode("utf-8")) == restored
    out = tmp_path / "restored.json"
    done = cli("restore", db, "--compaction", "1", "-o", out, env=env)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert out.read_bytes() == expected and not partial_files(tmp_path)


def test_archive_export_writes_exactly_what_the_api_gives(surrogate_archive, tmp_path):
    db, _, exported = surrogate_archive
    expected = b"".join(documented(line + "\n") for line in exported)
    done = cli("archive", "export", db)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert done.stdout == expected
    out = tmp_path / "export.jsonl"
    assert cli("archive", "export", db, "-o", out).returncode == 0 and out.read_bytes() == expected
    # and the JSONL reads back into the same history
    with Archive(tmp_path / "b.sqlite3") as archive:
        archive.import_jsonl(out, session="back")
        back = [m for _, m in archive.replaced(1, session="back")]
    assert back == [json.loads(line)["message"] for line in exported[:-1]]


@pytest.mark.parametrize("command", [["restore"], ["archive", "export"]])
def test_the_help_says_how_lone_surrogates_are_written(command):
    done = cli(*command, "--help")
    text = " ".join(done.stdout.decode("utf-8").split())
    assert done.returncode == 0 and "lone surrogate" in text and "(\\ud83d)" in text and "ensure_ascii" in text


# ------------------------------------------------------------------------------------------ a bug of ours

# ``offline-compress count`` with the history reader replaced by one that fails as a bug would.
INTERNAL_ERROR_DRIVER = """
import sys
import offline_compress.cli.history_commands as commands
from offline_compress.cli import main

def broken(*args, **kwargs):
    raise RuntimeError("broken reader\\nsecond line")

commands.load_history_report = broken
print("returned", main(["count", sys.argv[1]]))
"""


@pytest.mark.parametrize("strict", [None, "0"], ids=["unset", "0"])
def test_an_internal_error_is_one_line_and_status_2(strict):
    env = {k: v for k, v in os.environ.items() if k != "OFFLINE_COMPRESS_STRICT"}  # conftest sets it for the tests
    if strict is not None:
        env["OFFLINE_COMPRESS_STRICT"] = strict
    done = subprocess.run(
        [sys.executable, "-c", INTERNAL_ERROR_DRIVER, str(MINI)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "returned 2\n", done.stderr
    assert done.stderr == (
        "offline-compress: internal error: RuntimeError: broken reader\\nsecond line "
        "(rerun with OFFLINE_COMPRESS_STRICT=1 for the traceback)\n"
    )


def test_strict_mode_raises_the_internal_error():
    env = {**os.environ, "OFFLINE_COMPRESS_STRICT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", INTERNAL_ERROR_DRIVER, str(MINI)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 1 and "returned" not in done.stdout
    assert "Traceback" in done.stderr and "RuntimeError: broken reader" in done.stderr


# ------------------------------------------------------------------------------------------ fuzzed files

# Each file through ``compress -o`` and ``count`` (stdout as it is, bytes), in one process: an exception escaping
# ``main`` (strict mode, as the tests set it) ends it with a traceback. Prints one JSON line per run.
FUZZ_DRIVER = """
import contextlib, io, json, sys
from pathlib import Path
from offline_compress.cli import main

out = Path(sys.argv[1])
for name in sys.argv[2:]:
    for argv in (["compress", name, "--keep-last", "2", "-o", str(out)], ["count", name]):
        out.unlink(missing_ok=True)
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(argv)
        written = out.read_text(encoding="utf-8") if out.exists() else None
        print(json.dumps({"argv": argv[0], "file": name, "code": code, "err": err.getvalue(), "out": written}),
              file=sys.stderr, flush=True)
"""


def fuzzed_histories(folder: Path, count: int = 12) -> list[Path]:
    """Small fixtures of several formats, damaged as test_fuzz damages them: the JSON escape of a lone surrogate
    inside texts (now and then gzip-compressed), the file cut short, a lone surrogate as the (invalid UTF-8) bytes
    a file may hold."""
    rng = random.Random(50)
    sources = [
        MINI,
        FIXTURES / "injection" / "mini_timeout_and_submit.json",
        next((FIXTURES / "codex").glob("*.jsonl")),
        FIXTURES / "aider" / "session-0343_2024-08-09T19-32-47.md",
    ]
    out = []
    for i in range(count):
        source = sources[i % len(sources)]
        data = source.read_bytes()
        kind = i // len(sources) % 3
        if kind in (0, 2):  # the escape of a lone surrogate at the start of a few texts (lines of Markdown)
            starts = [m.end() for m in re.finditer(rb'"content": ?"', data)]
            starts = starts or [m.end() for m in re.finditer(rb"\n", data)]
            for at in sorted(rng.sample(starts, 3), reverse=True):
                data = data[:at] + b"\\ud83d" + data[at:]
        elif i % 2:  # the bytes of a lone surrogate
            at = rng.randrange(1, len(data))
            data = data[:at] + "\ud83d".encode("utf-8", "surrogatepass") + data[at:]
        else:
            data = data[: rng.randrange(len(data) // 2, len(data))]
        if kind == 2:
            data = gzip.compress(data, mtime=0)
        path = folder / f"{i:02d}-{source.name}{'.gz' if kind == 2 else ''}"
        path.write_bytes(data)
        out.append(path)
    return out


def test_the_cli_on_fuzzed_files_writes_or_says_one_line(tmp_path):
    inputs = fuzzed_histories(tmp_path)
    out = tmp_path / "out" / "summary.json"
    done = subprocess.run(
        [sys.executable, "-c", FUZZ_DRIVER, str(out), *map(str, inputs)], capture_output=True, timeout=300
    )
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 0 and "Traceback" not in stderr, stderr[-3000:]
    done.stdout.decode("utf-8")  # the counts: UTF-8
    runs = [json.loads(line) for line in stderr.splitlines()]
    assert len(runs) == 2 * len(inputs)
    for run in runs:
        assert run["code"] in (0, 2), run
        errors = [line for line in run["err"].splitlines() if "error:" in line]
        assert len(errors) == (run["code"] == 2), run
        if run["argv"] == "compress":
            assert (run["out"] is not None) == (run["code"] == 0), run
            if run["out"] is not None:
                json.loads(run["out"])
    assert {run["code"] for run in runs} == {0, 2}  # some were read, some refused
    assert not partial_files(tmp_path)
