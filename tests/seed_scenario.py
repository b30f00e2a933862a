"""The seed's own example as a multi-turn agent history, in three languages (issue 46): a user who writes in Japanese
(the seed's language), the same session in English, and in Russian (another script). Built by hand from the seed's
sentences; each language's history has the same calls, outputs and structure, only the people's words differ.

``history(lang)`` gives OpenAI-format messages; ``WORDS[lang]`` the sentences the acceptance test looks for."""

from __future__ import annotations

import json
from typing import Any

WORDS: dict[str, dict[str, str]] = {
    "ja": {
        "task": "Express API に JWT 認証を実装してください。",
        "constraints": "TypeScript で書く。テストは Vitest を使う。認証ロジックは src/auth/ 配下に集約する。",
        "plan": "まず package.json を確認します。",
        "install": "パスワードのハッシュ化に bcrypt を入れます。",
        "after_install": "ネットワークに接続できないため、インストールできません。既に入っている依存だけで進めます。",
        "decision": "リフレッシュトークンは httpOnly Cookie に保存することにしました。理由: XSS リスクを下げるため。",
        "use_auth": "App.tsx で useAuth を使ってログイン状態を表示します。",
        "run_tests": "テストを実行します。",
        "after_error": "useAuth は AuthProvider の内側でしか使えません。main.tsx で App を AuthProvider で包みます。",
        "rerun": "もう一度テストを実行します。",
        "mid_user": "ログアウト後はトップページにリダイレクトしてください。",
        "remaining": "ログイン API は完成しました。残りのタスク: リフレッシュトークン更新フロー、ログアウト処理。",
        "next": "次はリフレッシュトークン更新フローを src/auth/refresh.ts に実装します。",
    },
    "en": {
        "task": "Implement JWT authentication for the Express API.",
        "constraints": "Write it in TypeScript. Use Vitest for the tests. Keep all auth logic under src/auth/.",
        "plan": "First I will check package.json.",
        "install": "I will add bcrypt to hash the passwords.",
        "after_install": "The network is unreachable, so it cannot be installed. I will continue with the dependencies that are already installed.",
        "decision": "I decided to store the refresh token in an httpOnly cookie. Reason: it lowers the XSS risk.",
        "use_auth": "I will show the login state in App.tsx with useAuth.",
        "run_tests": "Running the tests.",
        "after_error": "useAuth only works inside an AuthProvider. I will wrap App in AuthProvider in main.tsx.",
        "rerun": "Running the tests again.",
        "mid_user": "After logout, redirect to the top page.",
        "remaining": "The login API is done. Remaining tasks: the refresh token flow, logout.",
        "next": "Next I will implement the refresh token flow in src/auth/refresh.ts.",
    },
    "ru": {
        "task": "Реализуй JWT-аутентификацию для Express API.",
        "constraints": "Пиши на TypeScript. Для тестов используй Vitest. Вся логика аутентификации в src/auth/.",
        "plan": "Сначала посмотрю package.json.",
        "install": "Добавлю bcrypt для хеширования паролей.",
        "after_install": "Сеть недоступна, установить не получится. Продолжу с уже установленными зависимостями.",
        "decision": "Решил хранить refresh-токен в httpOnly cookie. Причина: это снижает риск XSS.",
        "use_auth": "Покажу состояние входа в App.tsx через useAuth.",
        "run_tests": "Запускаю тесты.",
        "after_error": "useAuth работает только внутри AuthProvider. Оберну App в AuthProvider в main.tsx.",
        "rerun": "Запускаю тесты ещё раз.",
        "mid_user": "После выхода перенаправляй на главную страницу.",
        "remaining": "API входа готов. Оставшиеся задачи: обновление refresh-токена, выход из системы.",
        "next": "Дальше реализую обновление refresh-токена в src/auth/refresh.ts.",
    },
}

PACKAGE_JSON = json.dumps(
    {
        "name": "auth-api",
        "type": "module",
        "scripts": {"test": "vitest run"},
        "dependencies": {"express": "^4.19.2", "jsonwebtoken": "^9.0.2", "react": "^18.3.1"},
        "devDependencies": {"typescript": "^5.4.5", "vitest": "^1.6.0"},
    },
    indent=2,
)
NPM_ERROR = """npm ERR! code EAI_AGAIN
npm ERR! syscall getaddrinfo
npm ERR! errno EAI_AGAIN
npm ERR! request to https://registry.npmjs.org/bcrypt failed, reason: getaddrinfo EAI_AGAIN registry.npmjs.org"""
TOKENS_TS = """import jwt from "jsonwebtoken";
import type { Response } from "express";

export const REFRESH_COOKIE = "refresh_token";

export function issueTokens(res: Response, userId: string, secret: string) {
  const access = jwt.sign({ sub: userId }, secret, { expiresIn: "15m" });
  const refresh = jwt.sign({ sub: userId, kind: "refresh" }, secret, { expiresIn: "7d" });
  res.cookie(REFRESH_COOKIE, refresh, { httpOnly: true, sameSite: "strict", secure: true });
  return access;
}
"""
TEST_FAIL = """ FAIL  src/App.test.tsx > App > shows the login state
Error: useAuth must be used within an AuthProvider
 ❯ useAuth src/auth/useAuth.ts:9:11
 ❯ App src/App.tsx:5:20

 Test Files  1 failed | 2 passed (3)
      Tests  1 failed | 7 passed (8)"""
TEST_PASS = """ ✓ src/auth/tokens.test.ts (4)
 ✓ src/auth/login.test.ts (3)
 ✓ src/App.test.tsx (1)

 Test Files  3 passed (3)
      Tests  8 passed (8)"""


def _call(k: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call_{k}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def history(lang: str) -> list[dict[str, Any]]:
    """The session: a failed install, the cookie decision and its edit, a failed test run and its fix, a user's
    instruction mid-session, the remaining tasks, then a few steps of the next task (kept verbatim by a hook)."""
    w = WORDS[lang]
    out: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent. Use the tools to read, edit and run code."},
        {"role": "user", "content": f"{w['task']}\n{w['constraints']}"},
    ]
    steps: list[tuple[str, str, dict[str, Any], str]] = [
        (w["plan"], "read_file", {"path": "package.json"}, PACKAGE_JSON),
        (w["install"], "bash", {"command": "npm install bcrypt"}, f"{NPM_ERROR}\n\nExit code: 1"),
        (
            w["after_install"],
            "read_file",
            {"path": "src/auth/login.ts"},
            "export async function login() {\n  // TODO\n}\n",
        ),
        (
            w["decision"],
            "write_file",
            {"path": "src/auth/tokens.ts", "content": TOKENS_TS},
            "File written: src/auth/tokens.ts",
        ),
        (
            w["use_auth"],
            "edit_file",
            {
                "path": "src/App.tsx",
                "old_string": "export function App() {\n  return <Home />;\n}",
                "new_string": "export function App() {\n  const { user } = useAuth();\n  return user ? <Home /> : <Login />;\n}",
            },
            "The file src/App.tsx has been edited.",
        ),
        (w["run_tests"], "bash", {"command": "npx vitest run"}, f"{TEST_FAIL}\n\nExit code: 1"),
        (
            w["after_error"],
            "edit_file",
            {
                "path": "src/main.tsx",
                "old_string": "root.render(<App />);",
                "new_string": "root.render(\n  <AuthProvider>\n    <App />\n  </AuthProvider>\n);",
            },
            "The file src/main.tsx has been edited.",
        ),
        (w["rerun"], "bash", {"command": "npx vitest run"}, f"{TEST_PASS}\n\nExit code: 0"),
    ]
    k = 0
    for said, tool, args, result in steps:
        k += 1
        out.append({"role": "assistant", "content": said, "tool_calls": [_call(k, tool, args)]})
        out.append({"role": "tool", "tool_call_id": f"call_{k}", "content": result})
    out.append({"role": "user", "content": w["mid_user"]})
    out.append({"role": "assistant", "content": w["remaining"]})
    out.append({"role": "user", "content": "OK"})
    # the next task begins: the recent messages a hook keeps verbatim
    for path in ("src/auth/refresh.ts", "src/auth/session.ts", "src/routes/auth.ts"):
        k += 1
        out.append({"role": "assistant", "content": w["next"], "tool_calls": [_call(k, "read_file", {"path": path})]})
        out.append({"role": "tool", "tool_call_id": f"call_{k}", "content": f"// {path}\nexport {{}};\n"})
    return out
