"""The hook for agent loops and its policy, in one place: ``CompactionHook`` (``compaction_hook``: call
``before_step(messages)`` before each model call), its configuration as data (``config``: ``HookConfig``), when it
fires (``trigger``: a pure decision from the history's exact token count), the loop guard's hold after a compaction
that could not reach its target (``guard``) and compacting harder (``harder``, with recent messages cut to fit by
``shrink``), the summary built in the background (``background``), the compactions it handed back and what a later
history owes them (``applied``), what it reports of each firing (``metrics``), and the failsafe that never lets a
fault of ours fail the agent's step (``safe_step``). Everything here logs as ``offline_compress.hook``. The public
names (``CompactionHook``, ``HookConfig``, ``TriggerConfig``, ``CompactionMetrics``) are imported from
``offline_compress``."""
