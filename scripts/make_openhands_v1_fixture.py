"""Regenerate tests/fixtures/openhands-v1/ with the real OpenHands software-agent-sdk (V1).

Runs a short conversation with the SDK's own scripted LLM (``openhands.sdk.testing.TestLLM``): parallel terminal
calls, file-editor calls, a failing command, a forced condensation (``conversation.condense()`` with the SDK's
``LLMSummarizingCondenser``), then a second user turn that ends with the finish tool. The SDK persists the
conversation itself; its ``event-*.json`` files are copied into the fixture folder (gzip-compressed, the bytes
unchanged), and the chat
messages the SDK sent to the agent's LLM at each step (``LLM.format_messages_for_llm``, recorded by a TestLLM
subclass) are written beside them as ``llm_inputs.json.gz``: the reference for what the model saw.

The SDK needs Python >= 3.12, so this runs in its own venv, outside the repository:

    ~/.pyenv/versions/3.12.1/bin/python -m venv /tmp/oh312
    /tmp/oh312/bin/pip install openhands-sdk openhands-tools
    /tmp/oh312/bin/python scripts/make_openhands_v1_fixture.py [OUT_DIR]

The fixture is committed, so the tests need no SDK. Event ids and timestamps are the SDK's (uuid4, wall clock):
two runs give different ids, the same shape.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from openhands.sdk import Agent, Conversation, Message, TextContent
from openhands.sdk.context.condenser import LLMSummarizingCondenser
from openhands.sdk.llm import MessageToolCall
from openhands.sdk.testing import TestLLM
from openhands.sdk.tool import Tool
from openhands.tools import FileEditorTool, TerminalTool, register_default_tools
from pydantic import PrivateAttr

OUT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "tests/fixtures/openhands-v1"


class RecordingLLM(TestLLM):
    """TestLLM that keeps the chat messages of every call, as the SDK formats them for a real provider."""

    __test__ = False
    _inputs: list[list[dict[str, Any]]] = PrivateAttr(default_factory=list)

    def completion(self, messages, tools=None, *args: Any, **kwargs: Any):  # type: ignore[override]
        self._inputs.append(self.format_messages_for_llm(messages))
        return super().completion(messages, tools, *args, **kwargs)


def call(call_id: str, name: str, arguments: dict[str, Any]) -> MessageToolCall:
    return MessageToolCall(id=call_id, name=name, arguments=json.dumps(arguments), origin="completion")


def reply(text: str, *calls: MessageToolCall) -> Message:
    return Message(role="assistant", content=[TextContent(text=text)], tool_calls=list(calls) or None)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="oh-v1-fixture-"))
    workspace, persist = work / "workspace", work / "conversations"
    workspace.mkdir()
    calc = str(workspace / "calc.py")
    terminal, editor = TerminalTool.name, FileEditorTool.name
    agent_llm = RecordingLLM.from_messages(
        [
            reply(
                "I'll look at the workspace and the Python version at once.",
                call("call_ls", terminal, {"command": "ls -la", "summary": "list the workspace"}),
                call("call_py", terminal, {"command": "python3 --version", "summary": "python version"}),
            ),
            reply(
                "The workspace is empty. I'll write calc.py with the add function.",
                call(
                    "call_create",
                    editor,
                    {"command": "create", "path": calc, "file_text": "def add(a, b):\n    return a - b\n"},
                ),
            ),
            reply(
                "Let me check it.",
                call("call_check", terminal, {"command": "python3 -c 'import calc; assert calc.add(2, 3) == 5'"}),
            ),
            reply(
                "The assertion fails: add subtracts. Fixing it.",
                call(
                    "call_fix",
                    editor,
                    {"command": "str_replace", "path": calc, "old_str": "return a - b", "new_str": "return a + b"},
                ),
            ),
            reply("add(2, 3) now returns 5: calc.py is fixed."),
            # After the forced condensation and the second user message:
            reply(
                "Adding subtract and checking both.",
                call(
                    "call_sub",
                    editor,
                    {
                        "command": "insert",
                        "path": calc,
                        "insert_line": 2,
                        "new_str": "\n\ndef sub(a, b):\n    return a - b",
                    },
                ),
                call("call_view", editor, {"command": "view", "path": calc}),
            ),
            reply(
                "Running both checks.",
                call(
                    "call_both",
                    terminal,
                    {"command": "python3 -c 'import calc; print(calc.add(2, 3), calc.sub(5, 3))'"},
                ),
            ),
            reply("", call("call_finish", "finish", {"message": "calc.py has add and sub, both checked."})),
        ]
    )
    summary_llm = TestLLM.from_messages(
        [
            reply(
                "USER_CONTEXT: make calc.add(2, 3) return 5.\nCOMPLETED: created calc.py; add subtracted (assertion "
                "failed); fixed to return a + b.\nPENDING: none."
            )
        ]
    )
    register_default_tools(enable_browser=False)
    agent = Agent(
        llm=agent_llm,
        tools=[Tool(name=terminal), Tool(name=editor)],
        condenser=LLMSummarizingCondenser(llm=summary_llm, max_size=40, keep_first=2),
    )
    conversation = Conversation(agent=agent, workspace=str(workspace), persistence_dir=str(persist), visualizer=None)
    conversation.send_message("Write calc.py with add(a, b) so that add(2, 3) == 5, and check it.")
    conversation.run()
    conversation.condense()
    conversation.send_message("Now add sub(a, b) as well, check both, then finish.")
    conversation.run()
    conversation.close()

    (events_dir,) = persist.rglob("events")
    target = OUT / "conversation" / "event_service" / "events"
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for path in sorted(events_dir.glob("event-*.json")):
        # gzip-compressed (the importer reads gzip by its magic number): the test suite treats every *.json
        # under tests/fixtures as a whole history, and one event is not one.
        (target / f"{path.name}.gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    inputs = json.dumps(agent_llm._inputs, indent=1, ensure_ascii=False) + "\n"
    (OUT / "llm_inputs.json.gz").write_bytes(gzip.compress(inputs.encode("utf-8"), mtime=0))
    print(f"{len(list(target.iterdir()))} events, {len(agent_llm._inputs)} LLM calls -> {OUT}")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
