"""mini-swe-agent with compaction: ``CompactingAgent`` is mini-swe-agent's ``DefaultAgent`` that passes its
history through a ``CompactionHook`` before every model query, the extension point mini-swe-agent documents
(``DefaultAgent.query``: "Override to add hooks"). Nothing of mini-swe-agent is patched.

::

    from minisweagent.environments.local import LocalEnvironment
    from offline_compress import CompactionHook, HookConfig
    from offline_compress.integrations.mini_swe_agent import CompactingAgent, builtin_config, local_model

    config = builtin_config("mini_textbased")            # mini-swe-agent's own templates
    model = local_model("http://127.0.0.1:8000/v1", "gemma", **config["model"])
    hook = CompactionHook(32_768, HookConfig(recall_note=""),  # no recall tool in mini-swe-agent
                          archive_path="archive.sqlite3")
    agent = CompactingAgent(model, LocalEnvironment(cwd="repo", **config["environment"]), hook=hook,
                            **config["agent"])
    agent.run("Fix the failing test in tests/test_x.py")
    agent.trajectory   # every message of the run; agent.messages is what the model saw last

After a compaction ``agent.messages`` is ``[*head, summary, *recent]`` and the agent goes on from it; the messages it
replaced are in the hook's archive and in ``agent.trajectory``, and the saved trajectory file holds the full
record under ``messages`` (the compacted context under ``context_messages``, the compactions under
``info.offline_compress``).

``local_model`` builds mini-swe-agent's litellm model for an OpenAI-compatible server (llama-cpp-python's
server, vLLM, llama.cpp's llama-server) with litellm kept offline: litellm fetches its model-cost map from
GitHub when it is imported unless ``LITELLM_LOCAL_MODEL_COST_MAP`` is set, and ``LITELLM_OFFLINE_MODE`` stops
its other catalog look-ups, so ``keep_litellm_offline()`` sets both (if unset) and must run before anything
imports litellm; ``local_model`` calls it first.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# No banner on import. The user's own setting wins.
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

try:
    from minisweagent.agents.default import DefaultAgent
except ImportError as err:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f"offline_compress.integrations.mini_swe_agent needs mini-swe-agent ({err}); "
        'install it with: pip install "offline_compress[agents]"'
    ) from None

LITELLM_OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}


def keep_litellm_offline() -> None:
    """Set litellm's offline switches unless the environment already sets them. Call before litellm is
    imported: the model-cost map is fetched at import time."""
    for key, value in LITELLM_OFFLINE_ENV.items():
        os.environ.setdefault(key, value)


def builtin_config(name: str = "mini_textbased") -> dict[str, Any]:
    """One of mini-swe-agent's bundled YAML configs (``mini_textbased``: a ```` ```mswea_bash_command ````
    block per reply; ``mini``: tool calls), as a dict with ``agent``, ``environment`` and ``model`` keys."""
    import yaml
    from minisweagent.config import get_config_path

    return yaml.safe_load(Path(get_config_path(name)).read_text(encoding="utf-8"))


def local_model(base_url: str, model_name: str = "local", *, textbased: bool = True, **config: Any) -> Any:
    """mini-swe-agent's litellm model (text-based, or tool calls with ``textbased=False``) for the
    OpenAI-compatible server at ``base_url``. ``config`` goes to the model's config (``observation_template``,
    ``format_error_template``, ``model_kwargs`` merged over the defaults below). Cost tracking is off: a local
    model has no price."""
    keep_litellm_offline()
    model_class: type[Any]
    if textbased:
        from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel

        model_class = LitellmTextbasedModel
    else:
        from minisweagent.models.litellm_model import LitellmModel

        model_class = LitellmModel
    model_kwargs = {"api_base": base_url, "api_key": "none", "drop_params": True, "max_retries": 0}
    model_kwargs |= config.pop("model_kwargs", None) or {}
    config.setdefault("cost_tracking", "ignore_errors")
    return model_class(model_name=f"openai/{model_name}", model_kwargs=model_kwargs, **config)


class CompactingAgent(DefaultAgent):
    """``DefaultAgent`` whose history goes through ``hook.before_step`` before each model query.

    ``hook``: an ``offline_compress.CompactionHook`` (None: behaves exactly as ``DefaultAgent``).
    ``trajectory``: every message added during the run, in order, never compacted."""

    def __init__(self, model: Any, env: Any, *, hook: Any = None, **kwargs: Any) -> None:
        super().__init__(model, env, **kwargs)
        self.hook = hook
        self.trajectory: list[dict] = []

    def run(self, task: str = "", **kwargs: Any) -> dict:
        self.trajectory = []
        return super().run(task, **kwargs)

    def add_messages(self, *messages: dict) -> list[dict]:
        self.trajectory.extend(messages)
        return super().add_messages(*messages)

    def query(self) -> dict:
        if self.hook is not None:
            # The hook returns a new list (the caller's dicts untouched); the agent continues from it.
            self.messages = self.hook.before_step(self.messages)
        return super().query()

    def serialize(self, *extra_dicts: dict) -> dict:
        data = super().serialize(*extra_dicts)
        data["context_messages"] = list(self.messages)
        data["messages"] = list(self.trajectory)
        if self.hook is not None:
            data["info"]["offline_compress"] = {"compactions": [m.model_dump() for m in self.hook.metrics]}
        return data


__all__ = ["CompactingAgent", "LITELLM_OFFLINE_ENV", "builtin_config", "keep_litellm_offline", "local_model"]
