"""The harnesses' tool vocabularies: which tool names do what, in every harness we read (issue 49: adding a
harness's tool names is an edit of this one file; its importer is a file of ``formats/``). Two readings stay apart:
the text-interface commands a SWE-agent writes inside a shell action (``extract.commands``, read as a shell line),
and the contradiction counter's own reading of calls (``contradictions``: an evaluator of the agent, kept
independent of the extractor).

Names are lower case and matched case-insensitively; a "server.tool" or "mcp__server__tool" name matches on its
last part (``extract.calls``), except where a list says it matches the whole name."""

from __future__ import annotations

# What a call does, by its tool's name (``extract.calls.Kind``).
SHELL_TOOLS = frozenset(
    "bash shell sh zsh execute_bash execute_command run_command run_shell_command terminal run exec cmd exec_command "
    "execute_shell command_line local_shell container.exec bash_tool shell_command bash_code_execution".split()
)
READ_TOOLS = frozenset("read read_file view view_file open open_file cat viewcode view_code get_file readfile".split())
EDIT_TOOLS = frozenset(
    "edit multiedit str_replace replace_in_file edit_file apply_patch patch rewrite insert append".split()
)
WRITE_TOOLS = frozenset("write write_file create create_file save_file notebookedit".split())
SEARCH_TOOLS = frozenset(
    "grep glob find search search_codebase semanticsearch findclass findfunction findcodesnippet search_dir "
    "search_file find_file codebase_search file_search list_files listdir ls websearch web_search".split()
)
TODO_TOOLS = frozenset("todowrite todo_write think task_tracker update_plan plan exitplanmode".split())
AGENT_TOOLS = frozenset("task agent dispatch_agent subagent".split())
FINISH_TOOLS = frozenset("finish submit done attempt_completion".split())
# Editors whose ``command`` argument says what the call does (view, create, str_replace, insert, undo_edit).
EDITOR_TOOLS = frozenset(
    "str_replace_editor str_replace_based_edit_tool editor file_editor text_editor_code_execution".split()
)

# Tools whose edit of a file with no lines removed writes the file whole (the working state says "written").
WHOLE_FILE_WRITERS = frozenset("write write_file create create_file save_file str_replace_editor".split())

# The file viewers and searches of SWE-agent and OpenHands that change nothing (a step of only these is a read).
READ_ONLY_TOOLS = frozenset(
    "open view goto scroll_up scroll_down search_dir search_file find_file str_replace_editor".split()
)

# The tools whose results are whole files, searches or web pages: after one of them the history may have grown by
# thousands of tokens in one step (Claude Code, OpenHands, SWE-agent, Moatless, Codex). Read by the trigger.
HEAVY_TOOLS = frozenset(
    "search_codebase read_many_files read read_file view view_file grep glob webfetch web_fetch websearch "
    "viewcode semanticsearch findcodesnippet str_replace_editor file_search codebase_search".split()
)

# Tools through which an agent asks its user a question: the harness writes the person's answer as the call's
# result (Claude Code's AskUserQuestion, OpenCode's question, Cline's ask_followup_question, the Codex CLI's
# request_user_input, LangChain's human). Matched on the whole name: a namespaced tool of the same last name (an MCP
# server's) is not the harness's own, and its output stays tool output.
ASK_TOOLS = frozenset(
    "askuserquestion ask_user_question ask_user askuser ask_question question ask_human ask_followup_question "
    "request_user_input human".split()
)
