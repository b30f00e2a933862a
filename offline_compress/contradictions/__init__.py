"""Contradiction counter: the user's constraints as typed rules, checked against what the agent did.

``count_contradictions(history)`` reads the constraints from the genuine user/system/developer text of a
history, turns those it can check into typed rules, replays the agent's actions (tool calls, shell commands,
editor calls, patches) against a model of the working tree, and reports every action that breaks a rule: which
rule, which constraint (verbatim), which step (the message index of the action), what evidence (the command,
editor call or ``diff --git`` header, verbatim, at most 300 characters), and whether the contradiction is still
there at the end (``final``). Constraints it finds but cannot check are listed in ``unchecked``, never counted.

It is also used as an evaluator (the live A/B counts an agent's contradictions), so it never imports
``offline_compress.extract``: what it shares with the extractor lies on the history's floor below both, the shell
lexer (``offline_compress.history.shell``) and which messages are tool output
(``offline_compress.history.conventions``).

Modules, in the order the data flows: ``rules`` (the typed rules and their parsing from the constraints),
``operations`` (what a command does to the tree, read with the history's shell lexer), ``actions`` (the agent's
calls as operations), ``tree`` (file versions), ``checker`` (the replay and the report, ``count_contradictions``).

Where the constraints come from
    ``system`` and ``developer`` messages, and ``user`` messages that are not tool output. Tool output is every
    ``tool`` message, a ``user`` message that starts with ``<returncode>``, and a ``user`` message right after an
    assistant message that holds an action (tool calls or a fenced shell block): mini-swe-agent and SWE-agent
    send results back as ``user`` messages. Fenced code blocks inside a message are not read for constraints.
    A constraint applies to the actions after the message it was read from; constraints passed with
    ``constraints=`` apply from the start.

Rules (``Rule.kind``; ``Rule.name`` is what ``Contradiction.rule`` holds)
    ``protected-path``  "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)", "never
        edit src/legacy/", "make changes to non-test files", "X must not be modified". One rule per category
        (``protected-path:tests``, ``protected-path:config``) or path (``protected-path:src/legacy/``). Broken
        by an action after which a protected file differs from its state at the start (written, created,
        deleted, moved). Renaming the categories' examples (pyproject.toml) folds them into the category.
    ``only-under``      "only change files under src/": broken by a change to a file outside the folder.
    ``no-install``      "don't install other packages", "do not install numpy": broken by ``pip``/``pip3``/
        ``python -m pip``/``uv pip``/``uv add``/``poetry add``/``conda``/``mamba``/``apt``/``apt-get``/
        ``npm``/``yarn``/``pnpm``/``gem``/``cargo`` installs that name a package. Installing the project
        itself (``pip install -e .``, a local path) or from a requirements file (``-r``) is not counted.
    ``no-push``         "never push to main": ``git push`` whose target branch is named (``origin main``,
        ``HEAD:main``) or is the current branch as set by ``git checkout``/``git switch`` in the history; a bare
        push from an unknown branch is not counted. ``main`` and ``master`` stand for each other (the default
        branch). "never push" without a branch forbids every push.
    ``forbidden-name``  "use X, not Y", "use X instead of Y", "prefer X over Y", "don't use Y", "avoid using Y"
        with Y one name or flag: broken by ``import Y``/``from Y import`` in code the agent ran or wrote, an
        install of Y, running Y as a program (also ``python -m Y``), or, for a flag (``--no-git``), a command
        or written text that holds it.

What counts as a test file (``is_test_path``)
    A path with a folder named ``test``, ``tests`` or ``testing``; or a file named ``test_*.py``,
    ``*_test.py``, ``tests.py``, ``conftest.py``, ``*_test.go``, ``*.test.<js|jsx|ts|tsx|mjs|cjs>`` or
    ``*.spec.<js|jsx|ts|tsx|mjs|cjs>``. A scratch ``test_repro.py`` at the top of the tree is a test file.

What counts as a configuration file (``is_config_path``)
    A file named ``pyproject.toml``, ``setup.cfg``, ``setup.py``, ``tox.ini``, ``pytest.ini``, ``noxfile.py``,
    ``.coveragerc``, ``.flake8``, ``mypy.ini``, ``.pylintrc``, ``pylintrc``, ``.isort.cfg``,
    ``.pre-commit-config.yaml``, ``.editorconfig``, ``MANIFEST.in``, ``Pipfile``, ``Pipfile.lock``,
    ``poetry.lock``, ``environment.yml``, ``package.json``, ``package-lock.json``, ``yarn.lock``,
    ``tsconfig.json``, ``Cargo.toml``, ``go.mod`` or ``requirements*.txt``, or any file under ``.github/``.

The working tree and ``final``
    Each file has a version: its content at the start, a copy of another file's content (``cp``, ``mv``), new
    content, or absent. A file differs at the end when its version is not its starting content (a file that did
    not exist at the start and is absent again does not differ). An action that leaves a file equal to its start
    (``git checkout -- f``, ``git restore``, ``git stash``, ``git reset --hard``, ``rm`` of a file created in
    the history, ``mv f.bak f`` after ``cp f f.bak``) undoes the contradictions since the file last equalled
    its start: they stay in the report with ``final: false``. A contradiction is final when its file still
    differs at the end. Untracked files count: mini-swe-agent and SWE-agent submit ``git add -A && git diff
    --cached``, which includes them. Installs are final unless uninstalled later; pushes are always final; a
    forbidden name in a command is never final (it leaves nothing), in written code it is final while that file
    differs.
    Actions read: OpenAI ``tool_calls`` (a ``command``/``cmd``/``script`` shell argument; editor calls with a
    path: ``create``, ``str_replace``, ``insert``, ``write``, ``edit``, ``undo_edit``; ``delete``/``remove``
    calls), SWE-agent commands (``create F``, ``open F``, ``edit N:M`` ... ``end_of_edit``, ``insert``,
    ``str_replace_editor ...``), fenced shell blocks of assistant messages without tool calls (mini-swe-agent:
    a message with more than one block is not run, unless the next message reports a ``<returncode>``), and
    aider's ``Applied edit to F`` lines. In shell commands: redirections (``>``, ``>>``, here-documents),
    ``tee``, ``sed -i``, ``perl -i``, ``awk -i inplace``, ``ed``, ``cp``, ``mv``, ``rm``, ``touch`` (a new
    file only in a folder the history created), ``mkdir``, ``git checkout/restore/stash/reset --hard/clean/
    rm/mv/apply``, ``patch``, ``cd`` (within one action; tool-call shells keep it across actions), ``bash -c``,
    and Python run with ``-c``, from a here-document or from a script whose text the history wrote
    (``open(p, 'w'|'a'|'x'|'r+')``, ``Path(p).write_text``, ``os.remove``, ``shutil.copy/move``,
    ``os.rename``, with ``p`` a string literal or a variable assigned one). ``git diff`` output the agent saw is
    evidence too: a file it shows as changed differs (a contradiction at that step if nothing read before
    explained it); a whole-tree ``git diff`` whose output was not cut short also shows which files no longer
    differ. Paths under ``/tmp``, ``/var/tmp``, ``/dev``, ``/proc``, ``/sys``, ``/etc``, ``~`` or a
    ``site-packages``/``dist-packages`` folder are outside the working tree and never count.
    Not read (so not counted): files written by programs whose text the history does not hold, ``find -exec``
    / ``xargs`` targets, variables in paths (``$F``), globs beyond their literal text.
"""

from __future__ import annotations

from ..history.shell import parse_shell
from .checker import count_contradictions
from .rules import Contradiction, ContradictionReport, Rule, derive_rules, is_config_path, is_test_path

__all__ = [
    "Contradiction",
    "ContradictionReport",
    "Rule",
    "count_contradictions",
    "derive_rules",
    "is_config_path",
    "is_test_path",
    "parse_shell",
]
