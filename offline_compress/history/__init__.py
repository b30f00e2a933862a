"""The history: the canonical message (OpenAI chat format, ``messages``), which messages are tool output (the one
definition every other module uses, ``conventions``), where a compaction may cut (``cut``: the head's end, the last
messages kept, never between a tool call and its results), tool output as the summary reads it, as a terminal
shows it (``terminal``), and the shell lexer (``shell``: a command line as simple commands, the one the extractor
and the contradiction counter both read commands with). Everything here is a pure function of the messages, and
nothing here imports another folder of the package: the history is the floor the rest stands on."""
