"""Moatless Tools trajectories: ``trajectory.json`` of Moatless Tools 0.4 (``{metadata, agent, nodes, ...}``).

``nodes`` is a search tree stored as a flat list ``{node_id, parent_id, action, observation, completions, ...}``;
node 0 is the root and holds the task. When the agent went back to the root (a restart), the abandoned branch
stays earlier in the list: the run that produced the result is the path from the root to the **last** node.

Each expanded node's ``completions.build_action`` is the LLM call that chose its action: ``input`` is the whole
history sent at that step, in Anthropic Messages shape, and ``response`` the raw Anthropic reply. The run is
therefore rebuilt from the deepest expanded node of the final path:

* ``agent.system_prompt`` -> a ``system`` message (the prompt is not in ``input``);
* ``input``, converted from Anthropic blocks to OpenAI messages by ``anthropic.Thread`` (the mapping in
  ``anthropic.py``'s docstring: text blocks joined by newlines, ``tool_use`` -> assistant ``tool_calls``,
  ``tool_result`` -> ``tool`` messages before any text of the same user turn; ``cache_control`` is dropped). A
  call's ``input`` must be an object. User turns stay user turns, including the harness's own nudges ("Please
  provide a tool call.") that follow an assistant reply without a call. The history ids are kept as they are;
  they look derived from the call, as an identical repeated call repeats its id (in the real runs always after
  the first one was answered, which ``Thread(reuse_answered_ids=True)`` allows). A node whose first attempt
  failed and was retried within the node shows the failed attempt in ``input``, as the model saw it;
* ``response`` -> the final assistant message. It keeps the API's ids (``toolu_…``) where the history renumbers
  them (``call_…``), so the final call keeps its API id and its result uses the same id;
* when that node was executed (it has an ``observation``), ``observation.message`` -> the ``tool`` result of the
  response's first call, wrapped as Moatless wraps every result in later prompts (``<observation>\\n…\\n
  </observation>``). An unexecuted last node leaves its call without a result.

Left out, and said so in the notes: the nodes of abandoned branches, and the nested ``execute_action``
completions (an LLM call made *inside* an action, e.g. a semantic search asking the model to pick spans): those
are sub-calls, not the agent's history. ``file_context``, ``usage`` and ``metadata`` are not messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InputError
from .anthropic import ROLES, BlockError, Thread
from .imported import Imported
from .openai import expect, object_list, parse_json

FORMAT = "moatless"


def _node_key(value: Any) -> int | str | None:
    return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None


def _check_shape(data: Any, source: str) -> list[Mapping[str, Any]]:
    nodes = object_list(data, "nodes", source, kind=": not a Moatless trajectory", items=" of nodes")
    if not isinstance(data.get("agent"), Mapping) and not isinstance(data.get("metadata"), Mapping):
        raise InputError(
            "a 'nodes' list without an 'agent' or 'metadata' object (not a Moatless trajectory)", source=source
        )
    for i, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise InputError(
                f"node is a {type(node).__name__}, expected an object", source=source, position=f"node {i}"
            )
        if _node_key(node.get("node_id")) is None:
            raise InputError("node has no 'node_id'", source=source, position=f"node {i}", field="node_id")
    return nodes


def final_path(nodes: list[Mapping[str, Any]], source: str) -> list[Mapping[str, Any]]:
    """The nodes from the root to the last node of the list (the branch that produced the result)."""
    by_id = {node["node_id"]: node for node in nodes}
    path = [nodes[-1]]
    seen = {nodes[-1]["node_id"]}
    while path[-1].get("parent_id") is not None:
        parent = _node_key(path[-1]["parent_id"])
        where = f"node {path[-1]['node_id']}"
        if parent not in by_id:
            raise InputError(
                f"'parent_id' {path[-1]['parent_id']!r} names no node", source=source, position=where, field="parent_id"
            )
        if parent in seen:
            raise InputError("the 'parent_id' links form a cycle", source=source, position=where, field="parent_id")
        seen.add(parent)
        path.append(by_id[parent])
    return path[::-1]


def _build_action(node: Mapping[str, Any], source: str) -> Mapping[str, Any] | None:
    completions = node.get("completions")
    if completions is None:
        return None
    where = f"node {node['node_id']}"
    build = expect(completions, Mapping, "an object", "completions", source, position=where, field="completions")
    build = build.get("build_action")
    if build is None:
        return None
    return expect(build, Mapping, "an object", "build_action", source, position=where, field="completions.build_action")


def _add(thread: Thread, role: Any, content: Any, node: str, field: str) -> None:
    """One Anthropic message of the node's LLM call, converted by ``Thread``; errors name the node and field."""
    if role not in ROLES:
        raise InputError(
            f"unknown role {role!r} (expected user or assistant)",
            source=thread.source,
            position=node,
            field=f"{field}.role",
        )
    if role == "assistant" and isinstance(content, list):
        for j, block in enumerate(content):
            # Moatless always sends a call's arguments as an object: anything else is a damaged file
            if isinstance(block, Mapping) and block.get("type") == "tool_use" and "input" in block:
                where = {"position": node, "field": f"{field}.content[{j}].input"}
                expect(block["input"], Mapping, "an object", "input", thread.source, **where)
    try:
        if role == "assistant":
            thread.assistant(content, f"{node}, {field}")
        else:
            thread.user(content, f"{node}, {field}")
    except BlockError as err:
        raise InputError(err.problem, source=thread.source, position=node, field=f"{field}.{err.field}") from None


def _observation(node: Mapping[str, Any], source: str) -> str | None:
    """The text the node's action returned, or None when the node was never executed."""
    observation = node.get("observation")
    if observation is None:
        return None
    where = f"node {node['node_id']}"
    message = expect(observation, Mapping, "an object", "observation", source, position=where, field="observation")
    message = message.get("message")
    if message is None:
        return None
    expect(message, str, "a string", "message", source, position=where, field="observation.message")
    return f"<observation>\n{message}\n</observation>"


def _system_prompt(data: Mapping[str, Any], source: str) -> str | None:
    agent = data.get("agent")
    if agent is None:
        return None
    prompt = expect(agent, Mapping, "an object", "agent", source, field="agent").get("system_prompt")
    return expect(prompt, (str, type(None)), "a string", "system_prompt", source, field="agent.system_prompt") or None


def import_data(data: Any, source: str) -> Imported:
    """The messages of an already-parsed ``trajectory.json`` and what was left out (rules in the module
    docstring). Dicts are built fresh, so the messages share no state with ``data``."""
    nodes = _check_shape(data, source)
    path = final_path(nodes, source)
    # the history repeats the id of an identical repeated call once the first one was answered
    thread = Thread(source, reuse_answered_ids=True)
    system = _system_prompt(data, source)
    if system:
        thread.system(system, "agent.system_prompt")
    expanded = [(node, build) for node in path if (build := _build_action(node, source)) is not None]
    if not expanded:
        task = path[0].get("message")
        if not isinstance(task, str) or not task.strip():
            raise InputError("no node was expanded and the root holds no task 'message'", source=source)
        thread.user(task, f"node {path[0]['node_id']}")
    else:
        node, build = expanded[-1]
        where = f"node {node['node_id']}"
        field = "completions.build_action.input"
        history = expect(build.get("input"), list, "a list of messages", "input", source, position=where, field=field)
        for j, message in enumerate(history):
            if not isinstance(message, Mapping):
                raise InputError(
                    f"a {type(message).__name__} in 'input', expected a message",
                    source=source,
                    position=where,
                    field=f"{field}[{j}]",
                )
            _add(thread, message.get("role"), message.get("content"), where, f"{field}[{j}]")
        response = build.get("response")
        if response is not None:
            field = "completions.build_action.response"
            expect(response, Mapping, "an object", "response", source, position=where, field=field)
            before = len(thread.raws)
            _add(thread, "assistant", response.get("content"), where, field)
            calls = [call for _, raw in thread.raws[before:] for call in raw.get("tool_calls") or ()]
            result = _observation(node, source)
            if calls and result is not None:
                answer = {"type": "tool_result", "tool_use_id": calls[0]["id"], "content": result}
                thread.user([answer], f"{where}, observation")
    notes = (*_notes(nodes, path), *thread.block_notes())
    return Imported(thread.messages(), skipped=tuple(thread.skipped), notes=notes)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _notes(nodes: list[Mapping[str, Any]], path: list[Mapping[str, Any]]) -> tuple[str, ...]:
    notes = []
    abandoned = len(nodes) - len(path)
    if abandoned:
        notes.append(f"{_count(abandoned, 'node')} of abandoned branches (the run restarted): not on the final path")
    nested = sum(
        1
        for node in path
        if isinstance(node.get("completions"), Mapping) and node["completions"].get("execute_action") is not None
    )
    if nested:
        notes.append(
            f"{_count(nested, 'nested execute_action completion')} (LLM calls inside an action): not the history"
        )
    return tuple(notes)


def load_moatless(text: str, source: str) -> Imported:
    """Parse a Moatless Tools ``trajectory.json`` into messages; raises ``InputError`` when it is not one."""
    return import_data(parse_json(text, source), source)
