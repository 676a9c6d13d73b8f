"""Gemini CLI end to end: the real `gemini` binary (from npm, installed by
scripts/lib/clients.sh) run headless (`gemini -p --yolo`) in a repository set
up by `code-intel init --client gemini`, its BeforeTool hooks and MCP client
real. The model is a scripted stand-in of the Gemini API on 127.0.0.1
(`GOOGLE_GEMINI_BASE_URL`, streaming SSE) that asks for the tool calls of
each scenario and records the function responses.

Proven: the code-intel MCP tools are offered to the model; without a session
write_file, replace and shell writes are blocked by the hook and change
nothing, a read-only shell command runs; with code-intel missing from PATH the
hook blocks (it fails closed)."""

from __future__ import annotations

import http.server
import json
import os
import re
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import copy_fixture

GEMINI = os.environ.get("CODE_INTEL_GEMINI_BIN", "")

pytestmark = pytest.mark.skipif(
    not (GEMINI and os.access(GEMINI, os.X_OK)),
    reason="Gemini CLI not installed: run scripts/test (scripts/lib/clients.sh installs it) or set CODE_INTEL_GEMINI_BIN",
)

SHELL_WRITES = [
    "sed -i 's/Services/Changed/' app/services.py",
    "echo 'x = 1' >> app/models.py",
    "python3 -c \"open('app/by_python.py', 'w').write('z')\"",
    "rm app/__init__.py",
]
READ_ONLY = "ls app && grep -c UserService app/services.py"


class GeminiModel:
    """Answers `streamGenerateContent` with the scenario's function calls;
    every other request (routing, summaries) gets a short text."""

    def __init__(self, repo_for: dict):
        self.repo_for = repo_for
        self.responses: dict[str, list[dict]] = {}
        self.tools: dict[str, list[str]] = {}
        self.errors: list[str] = []
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                try:
                    parts = model.answer(body)
                except Exception as e:
                    model.errors.append(repr(e))
                    parts = [{"text": f"stand-in error: {e!r}"}]
                resp = {
                    "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                    "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                }
                if "alt=sse" in self.path:
                    data, ctype = f"data: {json.dumps(resp)}\r\n\r\n".encode(), "text/event-stream"
                else:
                    data, ctype = json.dumps(resp).encode(), "application/json"
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, body: dict) -> list[dict]:
        contents = body.get("contents") or []
        tools = [f["name"] for t in body.get("tools") or [] for f in t.get("functionDeclarations") or []]
        texts = "\n".join(p.get("text", "") for c in contents if c.get("role") == "user" for p in c.get("parts", []))
        found = re.search(r"SCENARIO:([\w-]+)", texts)
        if not tools or not found:
            config = body.get("generationConfig") or {}
            if config.get("responseMimeType") == "application/json" or config.get("responseJsonSchema"):
                # Gemini CLI's model router asks for a JSON choice.
                return [{"text": json.dumps({"reasoning": "A short scripted request.", "model_choice": "flash"})}]
            return [{"text": "ok"}]
        scenario = found.group(1)
        self.tools[scenario] = tools
        responses = [p["functionResponse"] for c in contents for p in c.get("parts", []) if "functionResponse" in p]
        self.responses[scenario] = responses
        if any("functionCall" in p for c in contents if c.get("role") == "model" for p in c.get("parts", [])):
            return [{"text": f"{scenario} finished"}]
        repo = self.repo_for[scenario]
        if scenario == "blocked":
            calls = [
                ("write_file", {"file_path": f"{repo}/app/written.py", "content": "w = 1\n"}),
                ("replace", {"file_path": f"{repo}/app/services.py", "old_string": "Services built on the models.", "new_string": "Edited.", "instruction": "edit"}),
            ]
            calls += [("run_shell_command", {"command": cmd, "description": "write"}) for cmd in SHELL_WRITES]
            calls.append(("run_shell_command", {"command": READ_ONLY, "description": "look"}))
        else:
            calls = [("write_file", {"file_path": f"{repo}/app/while_missing.py", "content": "m = 1\n"})]
        return [{"functionCall": {"name": name, "args": args}} for name, args in calls]


def snapshot(repo: Path) -> dict[str, bytes]:
    return {
        p.relative_to(repo).as_posix(): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file() and not p.relative_to(repo).as_posix().startswith((".git/", ".code-intel/", ".gemini/"))
    }


@pytest.fixture(scope="module")
def world(tmp_path_factory, code_intel_bin):
    base = tmp_path_factory.mktemp("gemini-cli")
    repo = copy_fixture("mini-repo", base).resolve()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "code-intel").symlink_to(code_intel_bin)
    home = base / "home"
    (home / ".gemini").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODE_INTEL_", "GEMINI", "GOOGLE", "CLAUDE"))}
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", CODE_INTEL_OFFLINE="1", CODE_INTEL_LOG="warn")
    init = subprocess.run([code_intel_bin, "init", "--client", "gemini", str(repo)], capture_output=True, text=True, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    # The user's choices: this folder trusted, an API key as the way to log in.
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(repo): "TRUST_FOLDER"}))
    (home / ".gemini" / "settings.json").write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    model = GeminiModel({"blocked": repo, "missing": repo})
    env.update(GOOGLE_GEMINI_BASE_URL=model.url, GEMINI_API_KEY="stand-in")
    yield {"repo": repo, "env": env, "model": model, "bin_dir": bin_dir}
    model.server.shutdown()


def gemini(world, prompt: str) -> subprocess.CompletedProcess:
    out = subprocess.run(
        [GEMINI, "-p", prompt, "--yolo"], cwd=world["repo"], env=world["env"], capture_output=True, text=True, timeout=240
    )
    assert not world["model"].errors, world["model"].errors
    return out


def test_writes_are_blocked_by_the_before_tool_hook(world):
    repo = world["repo"]
    before = snapshot(repo)
    out = gemini(world, "Change some files. SCENARIO:blocked")
    tools = world["model"].tools.get("blocked", [])
    assert any(t.endswith("start_session") and "code-intel" in t for t in tools), f"no code-intel MCP tools offered: {tools}\n{out.stderr}"
    responses = world["model"].responses.get("blocked", [])
    assert len(responses) == 3 + len(SHELL_WRITES), f"{responses}\n{out.stdout}{out.stderr}"
    *writes, look = responses
    let_through = [r for r in writes if "code-intel" not in json.dumps(r["response"]) or "blocked" not in json.dumps(r["response"])]
    assert not let_through, f"writes not blocked by the code-intel hook: {let_through}"
    assert "blocked" not in json.dumps(look["response"]) and "1" in json.dumps(look["response"]), look
    assert snapshot(repo) == before, "a blocked write changed the repository"


def test_the_hook_fails_closed_when_code_intel_is_missing(world):
    link = world["bin_dir"] / "code-intel"
    hidden = world["bin_dir"] / "code-intel.hidden"
    link.rename(hidden)
    try:
        gemini(world, "Write a file. SCENARIO:missing")
    finally:
        hidden.rename(link)
    responses = world["model"].responses.get("missing", [])
    assert responses and "not on PATH" in json.dumps(responses[0]["response"]), responses
    assert not (world["repo"] / "app" / "while_missing.py").exists()
