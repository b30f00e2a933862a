"""The hook's policy as data (``HookConfig``): validated by pydantic with the field's name in the error, read from a
mapping as from JSON, and the hook's own constructor down to the window, the config and what it is wired to."""

from __future__ import annotations

import inspect
import json

import pytest
from pydantic import ValidationError

from offline_compress import CompactionHook, HookConfig, TriggerConfig
from offline_compress.hook.config import DEFAULT_SUMMARY_ROOM, DEFAULT_TARGET_FRACTION


def test_the_hook_takes_a_window_a_config_and_what_it_is_wired_to() -> None:
    parameters = list(inspect.signature(CompactionHook.__init__).parameters)[1:]
    assert parameters == ["model_max_tokens", "config", "archive_path", "compressor", "counter", "on_compaction"]


def test_a_mapping_read_from_json_is_a_config(tmp_path) -> None:
    options = json.loads('{"keep_last": 3, "trigger": {"token_fraction": 0.6}, "summary_floor_tokens": 2048}')
    with CompactionHook(10_000, options, archive_path=tmp_path / "a.sqlite3") as hook:
        assert (hook.keep_last, hook.trigger.token_fraction, hook.summary_floor_tokens) == (3, 0.6, 2048)
        assert hook.config == HookConfig(
            keep_last=3, trigger=TriggerConfig(token_fraction=0.6), summary_floor_tokens=2048
        )


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"summary_max_tokens": 4096}, "summary_max_tokens"),  # the old name, refused by name
        ({"keep_last": True}, "keep_last"),
        ({"keep_last": -1}, "keep_last"),
        ({"summary_fraction": 1.5}, "summary_fraction"),
        ({"render": "yaml"}, "render"),
        ({"summary_role": "tool"}, "summary_role"),
        ({"trigger": {"token_fraction": 0.5}, "summary_room": 0.6}, "summary_room"),
        ({"trigger": {"token_fraction": 0.5}, "soft_fraction": 0.5}, "soft_fraction"),
    ],
)
def test_a_bad_setting_is_refused_with_its_name(options, named) -> None:
    with pytest.raises(ValidationError, match=named):
        HookConfig.model_validate(options)
    with pytest.raises(ValueError, match=named):  # as the hook raises it
        CompactionHook(10_000, options)


def test_unset_shares_keep_their_ratio_to_a_lower_trigger() -> None:
    low = HookConfig(trigger=TriggerConfig(token_fraction=0.1))  # LangChain's own tests use a 10% trigger
    assert low.room == pytest.approx(DEFAULT_SUMMARY_ROOM * 0.1 / 0.85) and low.room < 0.1
    assert low.target == pytest.approx(DEFAULT_TARGET_FRACTION * 0.1 / 0.85)
    assert (HookConfig().room, HookConfig().target) == (DEFAULT_SUMMARY_ROOM, DEFAULT_TARGET_FRACTION)
    assert HookConfig(summary_room=0.05, target_fraction=0.3).room == 0.05


def test_every_field_says_what_it_means() -> None:
    schema = HookConfig.model_json_schema()["properties"]
    assert set(schema) == set(HookConfig.model_fields)
    assert all(len(field.get("description", "")) > 30 for field in schema.values())


# ------------------------------------------------------------------------------------------- the model's settings


def test_the_compressor_keeps_the_llama_cpp_settings_apart_from_the_summary() -> None:
    from offline_compress import Compressor

    parameters = set(inspect.signature(Compressor.__init__).parameters)
    assert "llama" in parameters
    assert not parameters & {"n_ctx", "n_threads", "n_gpu_layers", "flash_attn", "decoder", "verify_model"}


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"n_ctx": 0}, "n_ctx"),
        ({"n_threads": -1}, "n_threads"),
        ({"decoder": "greedy"}, "decoder"),
        ({"threads": 2}, "threads"),
    ],
)
def test_bad_llama_settings_are_refused_by_name_before_any_model_loads(settings, field) -> None:
    from offline_compress import Compressor

    with pytest.raises(ValidationError, match=field):
        Compressor(None, llama=settings)


def test_llama_settings_given_as_a_model_or_a_mapping_are_the_same() -> None:
    from offline_compress.engine.llamacpp import LlamaSettings

    assert LlamaSettings.model_validate({"n_threads": 2, "decoder": "forced"}) == LlamaSettings(
        n_threads=2, decoder="forced"
    )
    assert LlamaSettings().model_dump() == {
        "n_ctx": 8192,
        "n_threads": None,
        "n_gpu_layers": 0,
        "flash_attn": False,
        "decoder": "outlines",
        "verify_model": True,
    }
