"""The seed's own example as acceptance tests (issue 46), in Japanese (the seed's language), English and Russian (another
script): the same fields come out filled in every language, each from the session's own words, read by their place
in the run: the cookie decision with its XSS reason, the failed ``npm install`` with its error, the failed test run
with the Provider error and what fixed it, the remaining tasks, and every constraint word for word; through the
compressor and through the hook."""

from __future__ import annotations

import json

import pytest
from seed_scenario import WORDS, history

from offline_compress import CompactionHook, Compressor
from offline_compress.history.messages import as_messages
from offline_compress.summary.message import parse_summary_message

LANGUAGES = ("ja", "en", "ru")


@pytest.fixture(scope="module")
def summaries():
    return {lang: Compressor().compress(history(lang), keep_last=7) for lang in LANGUAGES}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_seed_scenario_fills_the_same_fields_in_every_language(summaries, lang):
    summary, words = summaries[lang], WORDS[lang]
    # the cookie decision and its reason, in the agent's own words
    cookie = [d for d in summary.decisions if "httpOnly" in d.decision]
    assert [(d.decision, d.rationale) for d in cookie] == [tuple(x.strip() for x in _two_sentences(words["decision"]))]
    assert "XSS" in cookie[0].rationale
    # the failed install, with npm's error and what the agent concluded
    [install] = [f for f in summary.failed_attempts if f.approach == "npm install bcrypt"]
    assert install.reason_failed == "npm ERR! code EAI_AGAIN" and not install.resolved_by
    assert install.then == words["after_install"].replace("。", "。 ").strip() or install.then in words["after_install"]
    # the failed test run of the useAuth change in App.tsx: the Provider error, what the agent did, and that it passed
    [tests] = [f for f in summary.failed_attempts if "vitest" in f.approach]
    assert tests.reason_failed == "Error: useAuth must be used within an AuthProvider"
    assert "AuthProvider" in tests.then and tests.resolved_by.endswith("npx vitest run")
    assert any(f.path == "src/App.tsx" and "const { user } = useAuth();" in f.now for f in summary.files)
    assert any(f.path == "src/auth/tokens.ts" and f.change == "created" for f in summary.files)
    # the remaining tasks the agent stated, item by item
    stated = words["remaining"].split(":")[-1] if ":" in words["remaining"] else ""
    items = [x.strip(" .。") for x in stated.replace("、", ",").split(",") if x.strip(" .。")]
    assert len(items) == 2 and all(x in summary.task_state.remaining for x in items)
    # every constraint word for word: the task's and the one given mid-session
    joined = "\n".join(summary.user_constraints)
    assert words["constraints"] in joined and words["mid_user"] in joined


def test_the_same_fields_are_filled_in_every_language(summaries):
    def shape(summary):
        doc = json.loads(summary.to_json())
        return {
            k: len(v)
            if isinstance(v, list)
            else sorted(k2 for k2, v2 in v.items() if v2)
            if isinstance(v, dict)
            else bool(v)
            for k, v in doc.items()
            if k != "work_log"
        }

    shapes = {lang: shape(s) for lang, s in summaries.items()}
    assert shapes["ja"] == shapes["en"] == shapes["ru"], shapes


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_hook_keeps_the_task_verbatim_and_summarises_the_rest(tmp_path, lang):
    messages = history(lang)
    with CompactionHook(8192, archive_path=tmp_path / "a.sqlite3", compressor=Compressor()) as hook:
        new = hook.compact(messages)
    assert new[:2] == messages[:2]  # the head: the task and its constraints, verbatim
    summary = parse_summary_message(as_messages(new)[2])
    assert summary is not None and any("httpOnly" in d.decision for d in summary.decisions)
    assert any(f.reason_failed == "npm ERR! code EAI_AGAIN" for f in summary.failed_attempts)


def _two_sentences(text: str) -> tuple[str, str]:
    cut = max(text.find("。") + 1, text.find(". ") + 1)
    return text[:cut], text[cut:]
