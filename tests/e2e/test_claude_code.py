"""Claude Code end to end: the real `claude` binary (from npm, installed by
scripts/lib/clients.sh) run headless (`claude -p`) in a repository set up by
`code-intel init --client claude`, its hooks, permissions and MCP client
all real. The only stand-in is the model: a small scripted Anthropic
Messages API on 127.0.0.1 (streaming SSE) that answers with the tool calls
each scenario needs, and records the tool results Claude Code sends back.

What is proven:
- `claude mcp list` shows the code-intel server connected;
- without a session, Edit, Write, NotebookEdit and more than ten kinds of
  Bash writes are blocked by the hook and change nothing, while read-only
  Bash runs;
- `/code` expands with its frontmatter read (the description is listed, the
  frontmatter is not pasted into the prompt);
- a MODIFY session driven through the MCP tools by the model itself reaches
  READY, and then edits of the explored files (Edit, Bash `sed -i`, a new
  file beside them) go through while a write to an unexplored file is blocked;
- the committed files work unchanged on a second checkout at another path;
- with code-intel missing from PATH, the hook fails closed.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import copy_fixture
from test_session_workflow import QUERY, SLOTS, UNDERSTANDING

CLAUDE = os.environ.get("CODE_INTEL_CLAUDE_BIN", "")

pytestmark = pytest.mark.skipif(
    not (CLAUDE and os.access(CLAUDE, os.X_OK)),
    reason="Claude Code not installed: run scripts/test (scripts/lib/clients.sh installs it) or set CODE_INTEL_CLAUDE_BIN",
)

RUN_TIMEOUT = 240
CODE_DESCRIPTION = "Work on a coding request through the code-intel workflow (explore before you edit)"


# ---------------------------------------------------------------------------
# The scripted model


def sse(events: list[tuple[str, dict]]) -> bytes:
    return b"".join(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in events)


def message_events(model: str, blocks: list[dict], stop_reason: str) -> list[tuple[str, dict]]:
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_stand_in",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        )
    ]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": block["text"]}}))
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            events.append(("content_block_start", {"type": "content_block_start", "index": i, "content_block": start}))
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(c.get("text", "") for c in content or [] if isinstance(c, dict))


class Model:
    """The Messages API stand-in. A run's scenario is named in its prompt
    (`SCENARIO:name`); the scenario's script gives the tool calls of each
    assistant turn from the results so far."""

    def __init__(self, scripts: dict):
        self.scripts = scripts
        self.calls: dict[str, dict] = {}  # tool_use id -> {scenario, name, input, result, is_error}
        self.prompts: dict[str, list[str]] = {}  # scenario -> the first user message's texts
        self.requests: dict[str, list[dict]] = {}
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.counter = 0
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.send_response(404)
                self.end_headers()

            def do_HEAD(self):
                self.send_response(200)
                self.end_headers()

            def do_POST(self):
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                try:
                    blocks, stop = model.answer(body)
                except Exception as e:  # a broken script must show in the test, not hang it
                    model.errors.append(repr(e))
                    blocks, stop = [{"type": "text", "text": f"stand-in error: {e!r}"}], "end_turn"
                if body.get("stream"):
                    data = sse(message_events(body.get("model", "claude"), blocks, stop))
                    ctype = "text/event-stream"
                else:
                    data = json.dumps(
                        {
                            "id": "msg_stand_in",
                            "type": "message",
                            "role": "assistant",
                            "model": body.get("model", "claude"),
                            "content": blocks,
                            "stop_reason": stop,
                            "stop_sequence": None,
                            "usage": {"input_tokens": 10, "output_tokens": 5},
                        }
                    ).encode()
                    ctype = "application/json"
                self.send_response(200)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()

    def answer(self, body: dict) -> tuple[list[dict], str]:
        messages = body.get("messages") or []
        first = next((m for m in messages if m.get("role") == "user"), None)
        texts = [first["content"]] if first and isinstance(first.get("content"), str) else [
            c.get("text", "") for c in (first or {}).get("content", []) if isinstance(c, dict) and c.get("type") == "text"
        ]
        found = re.search(r"SCENARIO:([\w-]+)", "\n".join(texts))
        if not body.get("tools") or not found:
            return [{"type": "text", "text": "ok"}], "end_turn"
        scenario = found.group(1)
        with self.lock:
            self.prompts.setdefault(scenario, texts)
            self.requests.setdefault(scenario, []).append(body)
            for m in messages:
                if m.get("role") != "user" or isinstance(m.get("content"), str):
                    continue
                for c in m["content"]:
                    if c.get("type") == "tool_result" and c.get("tool_use_id") in self.calls:
                        call = self.calls[c["tool_use_id"]]
                        call["result"] = text_of(c.get("content"))
                        call["is_error"] = bool(c.get("is_error"))
            # Claude Code may send one assistant turn as several messages:
            # the step is the one after the latest turn whose calls it sends back.
            seen = [
                self.calls[c["id"]]["step"]
                for m in messages
                if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                for c in m["content"]
                if c.get("type") == "tool_use" and c.get("id") in self.calls
            ]
            step = max(seen) + 1 if seen else 0
            done = [c for c in self.calls.values() if c["scenario"] == scenario]
            uses = self.scripts[scenario](step, done)
            if not uses:
                return [{"type": "text", "text": f"{scenario} finished"}], "end_turn"
            blocks = []
            for name, tool_input in uses:
                self.counter += 1
                tid = f"toolu_{scenario.replace('-', '_')}_{self.counter:03d}"
                self.calls[tid] = {"scenario": scenario, "step": step, "name": name, "input": tool_input, "result": None, "is_error": None}
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": tool_input})
            return blocks, "tool_use"

    def results(self, scenario: str) -> list[dict]:
        return [c for c in self.calls.values() if c["scenario"] == scenario]


# ---------------------------------------------------------------------------
# Scenarios

BASH_WRITES = [
    "sed -i 's/Services/Changed/' app/services.py",
    "echo 'x = 1' >> app/models.py",
    "cat > app/heredoc.py <<'EOF'\nprint('written by a heredoc')\nEOF",
    "printf 'y = 2\\n' | tee app/tee.py",
    "python3 -c \"open('app/by_python.py', 'w').write('z = 3')\"",
    "cp app/models.py app/copy.py",
    "mv app/views.py app/moved.py",
    "rm app/__init__.py",
    "touch app/touched.py",
    "truncate -s 0 app/models.py",
    "dd if=/dev/zero of=app/dd.bin bs=1 count=4",
    "perl -pi -e 's/User/Person/' app/models.py",
    "git checkout -- app/services.py",
    "node -e \"require('fs').writeFileSync('app/by_node.js', 'x')\"",
    "cd app && echo 'moved = True' > cd_then_write.py",
]
READ_ONLY_BASH = (
    "ls app && git status --short && grep -n UserService app/services.py | head -3"
    " && perl -ne 'print \"$.: $_\" if /def (rename|greeting)/' app/services.py"
)


def blocked_script(step: int, done: list[dict]):
    if step == 0:
        return [("Read", {"file_path": "{repo}/app/services.py"}), ("Read", {"file_path": "{repo}/notebooks/analysis.ipynb"})]
    if step == 1:
        uses = [
            ("Edit", {"file_path": "{repo}/app/services.py", "old_string": "Services built on the models.", "new_string": "Edited."}),
            ("Write", {"file_path": "{repo}/app/written.py", "content": "w = 1\n"}),
            ("NotebookEdit", {"notebook_path": "{repo}/notebooks/analysis.ipynb", "cell_id": "cell-1", "new_source": "print('edited')"}),
        ]
        uses += [("Bash", {"command": cmd, "description": "write"}) for cmd in BASH_WRITES]
        uses.append(("Bash", {"command": READ_ONLY_BASH, "description": "look"}))
        return uses
    return None


def session_id(done: list[dict]) -> str:
    for c in done:
        if c["name"].endswith("start_session") and c["result"]:
            m = re.search(r'"session_id"\s*:\s*"([^"]+)"', c["result"])
            if m:
                return m.group(1)
    raise AssertionError(f"no session_id in the start_session result: {[c['result'] for c in done]}")


def mcp(tool: str) -> str:
    return f"mcp__code-intel__{tool}"


def ready_script(step: int, done: list[dict]):
    if step == 0:
        return [(mcp("start_session"), {"intent": "MODIFY", "query": QUERY})]
    sid = session_id(done)
    if step == 1:
        return [(mcp("set_query_frame"), {"session_id": sid, "slots": SLOTS})]
    if step == 2:
        return [(mcp("sync_index"), {})]
    if step == 3:
        return [
            (mcp("find_definitions"), {"symbol": "UserService", "session_id": sid}),
            (mcp("find_definitions"), {"symbol": "User", "session_id": sid}),
            (mcp("find_definitions"), {"symbol": "UserService.rename", "session_id": sid}),
            (mcp("find_references"), {"symbol": "UserService", "session_id": sid}),
        ]
    if step == 4:
        return [(mcp("submit_understanding"), {"session_id": sid, **UNDERSTANDING})]
    if step == 5:
        return [("Read", {"file_path": "{repo}/app/services.py"})]
    if step == 6:
        return [
            ("Edit", {"file_path": "{repo}/app/services.py", "old_string": "Rename a user and save the change.", "new_string": "Rename a user and save it."}),
            ("Bash", {"command": "sed -i 's/Operations on users./Operations on users (edited)./' app/services.py", "description": "edit"}),
            ("Bash", {"command": "perl -pi -e 's/\"Hello, \"/\"Hi, \"/' app/services.py", "description": "edit"}),
            ("Write", {"file_path": "{repo}/app/new_module.py", "content": "NEW = 1\n"}),
            ("Write", {"file_path": "{repo}/lib/Billing/Invoice.php", "content": "<?php // overwritten\n"}),
        ]
    return None


def code_script(step: int, done: list[dict]):
    return None


def clone_script(step: int, done: list[dict]):
    if step == 0:
        return [
            ("Bash", {"command": "echo 'cloned = True' >> app/models.py", "description": "write"}),
            (mcp("start_session"), {"intent": "INVESTIGATE", "query": "How does the user service rename users?"}),
        ]
    return None


def missing_script(step: int, done: list[dict]):
    if step == 0:
        return [("Write", {"file_path": "{repo}/app/while_missing.py", "content": "m = 1\n"})]
    return None


class Repo:
    """Fills `{repo}` in scripted inputs with the checkout a run works in."""

    current = ""


def with_repo(script):
    def run(step, done):
        uses = script(step, done)
        if not uses:
            return uses
        return [(name, json.loads(json.dumps(args).replace("{repo}", Repo.current))) for name, args in uses]

    return run


# ---------------------------------------------------------------------------
# Fixtures


def git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def snapshot(repo: Path) -> dict[str, bytes]:
    files = {}
    for path in sorted(repo.rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".code-intel/", ".claude/")):
            files[rel] = path.read_bytes()
    return files


NOTEBOOK = {
    "cells": [{"cell_type": "code", "id": "cell-1", "metadata": {}, "source": ["print('hello')"], "outputs": [], "execution_count": None}],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture(scope="module")
def world(tmp_path_factory, code_intel_bin):
    base = tmp_path_factory.mktemp("claude-code")
    repo = copy_fixture("mini-repo", base)
    (repo / "notebooks").mkdir()
    (repo / "notebooks" / "analysis.ipynb").write_text(json.dumps(NOTEBOOK, indent=1))
    bin_dir = base / "bin"
    bin_dir.mkdir()
    (bin_dir / "code-intel").symlink_to(code_intel_bin)
    home = base / "home"
    home.mkdir()

    # Nothing of the developer's: code-intel comes from PATH only (not
    # CODE_INTEL_BIN, which the hook would use), no real key or endpoint.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE", "ANTHROPIC", "CODE_INTEL_"))}
    # The compiled-plugin cache of the real user: a private HOME would
    # compile every plugin again.
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", CODE_INTEL_OFFLINE="1", CODE_INTEL_LOG="warn")

    git(repo, "init", "-q", "-b", "main")
    init = subprocess.run([code_intel_bin, "init", "--client", "claude", str(repo)], capture_output=True, text=True, env=env, timeout=60)
    assert init.returncode == 0, init.stderr
    # What a team commits: the project's server, the hook and /code (not
    # settings.local.json, not the index).
    git(repo, "add", "app", "lib", "notebooks", "README.md", ".gitignore", ".mcp.json", ".claude/settings.json", ".claude/commands/code.md")
    git(repo, "commit", "-q", "-m", "project with code-intel set up")
    clone = base / "elsewhere" / "second-checkout"
    clone.parent.mkdir()
    git(base, "clone", "-q", str(repo), str(clone))

    # The user's Claude Code state: onboarding done, both checkouts trusted,
    # and (for the clone, which has no settings.local.json) the project's
    # server approved, as the user answers the prompts.
    (home / ".claude.json").write_text(
        json.dumps(
            {
                "hasCompletedOnboarding": True,
                "projects": {
                    str(p): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True, "enabledMcpjsonServers": ["code-intel"]}
                    for p in (repo.resolve(), clone.resolve())
                },
            }
        )
    )
    model = Model(
        {
            "blocked": with_repo(blocked_script),
            "ready": with_repo(ready_script),
            "code": code_script,
            "clone": with_repo(clone_script),
            "missing": with_repo(missing_script),
        }
    )
    env.update(
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-stand-in",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        # Every tool listed up front (no ToolSearch round trip for
        # NotebookEdit and the MCP tools).
        ENABLE_TOOL_SEARCH="false",
        MCP_TIMEOUT="60000",
    )
    test_model = os.environ.get("CODE_INTEL_TEST_MODEL_DIR")
    if test_model:
        env["CODE_INTEL_MODEL_DIR"] = test_model
    yield {"repo": repo.resolve(), "clone": clone.resolve(), "env": env, "model": model, "bin_dir": bin_dir}
    model.close()


ALLOWED = "Read Edit Write NotebookEdit Bash mcp__code-intel"


def claude(world, cwd: Path, prompt: str, env: dict | None = None) -> subprocess.CompletedProcess:
    Repo.current = str(cwd)
    out = subprocess.run(
        [CLAUDE, "-p", prompt, "--allowedTools", ALLOWED, "--output-format", "text", "--max-turns", "20"],
        cwd=cwd,
        env=env or world["env"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert not world["model"].errors, world["model"].errors
    return out


def by_name(results: list[dict], name: str) -> list[dict]:
    return [r for r in results if r["name"] == name]


# ---------------------------------------------------------------------------
# Tests (in order: the READY session comes after the blocked writes)


def test_claude_mcp_list_shows_code_intel_connected(world):
    out = subprocess.run([CLAUDE, "mcp", "list"], cwd=world["repo"], env=world["env"], capture_output=True, text=True, timeout=120)
    line = next((l for l in out.stdout.splitlines() if l.startswith("code-intel:")), "")
    assert "Connected" in line, out.stdout + out.stderr


def test_writes_outside_a_ready_session_are_blocked(world):
    repo = world["repo"]
    before = snapshot(repo)
    out = claude(world, repo, "Change some files. SCENARIO:blocked")
    results = world["model"].results("blocked")
    assert results, f"Claude Code never called the model with tools: {out.stdout}{out.stderr}"
    reads = by_name(results, "Read")
    assert all(r["is_error"] is False for r in reads), reads
    writes = [r for r in results if r["step"] == 1 and not (r["name"] == "Bash" and r["input"]["command"] == READ_ONLY_BASH)]
    assert len(writes) == 3 + len(BASH_WRITES), writes
    let_through = [r for r in writes if r["is_error"] is not True or "code-intel" not in (r["result"] or "")]
    assert not let_through, "writes not blocked by the code-intel hook:\n" + "\n".join(
        f"{r['name']} {r['input'].get('command', r['input'].get('file_path', ''))}: {r['result']}" for r in let_through
    )
    # The refusals say what to do.
    edit = by_name(writes, "Edit")[0]["result"]
    assert "no active code-intel session" in edit and "start_session" in edit, edit
    python = next(r for r in writes if r["input"].get("command", "").startswith("python3"))["result"]
    assert "IMPLEMENT or MODIFY" in python, python
    look = next(r for r in results if r["name"] == "Bash" and r["input"]["command"] == READ_ONLY_BASH)
    assert look["is_error"] is False and "services.py" in look["result"], look
    assert "12:     def rename" in look["result"], look
    assert snapshot(repo) == before, "a blocked write changed the repository"


def test_code_command_expands_with_its_frontmatter_read(world):
    out = claude(world, world["repo"], "/code fix the rename in the user service SCENARIO:code")
    prompt = "\n".join(world["model"].prompts.get("code", []))
    assert prompt, f"the /code run never reached the model: {out.stdout}{out.stderr}"
    assert "Request: fix the rename in the user service SCENARIO:code" in prompt, prompt
    assert "start_session" in prompt, prompt
    assert "argument-hint:" not in prompt and "description:" not in prompt, f"the frontmatter was pasted into the prompt:\n{prompt}"
    # The description from the frontmatter is what Claude Code lists for the command.
    listed = json.dumps(world["model"].requests["code"][0])
    assert CODE_DESCRIPTION in listed, "the /code description (from its frontmatter) is not listed"


def test_a_ready_session_allows_edits_of_explored_files(world):
    repo = world["repo"]
    invoice = (repo / "lib" / "Billing" / "Invoice.php").read_bytes()
    out = claude(world, repo, "Fix the rename. SCENARIO:ready")
    results = world["model"].results("ready")
    mcp_calls = [r for r in results if r["name"].startswith("mcp__")]
    failed = [r for r in mcp_calls if r["is_error"] is not False]
    assert not failed, f"MCP tool calls failed: {failed}\n{out.stdout}{out.stderr}"
    understanding = next(r for r in mcp_calls if r["name"].endswith("submit_understanding"))["result"]
    assert "READY" in understanding, understanding
    edits = [r for r in results if r["step"] == 6]
    assert len(edits) == 5, f"the run stopped early: {results}\n{out.stdout}{out.stderr}"
    legit, unexplored = edits[:4], edits[4]
    refused = [r for r in legit if r["is_error"] is not False]
    assert not refused, f"legitimate READY edits refused: {refused}"
    text = (repo / "app" / "services.py").read_text()
    assert "Rename a user and save it." in text and "Operations on users (edited)." in text, text
    assert 'return "Hi, " + user.display_name()' in text, text
    assert (repo / "app" / "new_module.py").read_text() == "NEW = 1\n"
    assert unexplored["is_error"] is True and "code-intel" in unexplored["result"], unexplored
    assert (repo / "lib" / "Billing" / "Invoice.php").read_bytes() == invoice


def test_committed_config_works_on_a_second_checkout(world):
    clone = world["clone"]
    assert not (clone / ".claude" / "settings.local.json").exists()
    for name in (".mcp.json", ".claude/settings.json"):
        text = (clone / name).read_text()
        assert str(world["repo"]) not in text and str(world["bin_dir"]) not in text and "/home/" not in text, f"{name}: {text}"
    listed = subprocess.run([CLAUDE, "mcp", "list"], cwd=clone, env=world["env"], capture_output=True, text=True, timeout=120)
    assert any(l.startswith("code-intel:") and "Connected" in l for l in listed.stdout.splitlines()), listed.stdout + listed.stderr
    before = snapshot(clone)
    out = claude(world, clone, "Look around. SCENARIO:clone")
    results = world["model"].results("clone")
    bash = by_name(results, "Bash")[0]
    assert bash["is_error"] is True and "code-intel" in bash["result"], bash
    start = next(r for r in results if r["name"].endswith("start_session"))
    assert start["is_error"] is False and "session_id" in start["result"], f"{start}\n{out.stderr}"
    assert (clone / ".code-intel").is_dir(), "the server did not serve the second checkout"
    assert snapshot(clone) == before


def test_the_hook_fails_closed_when_code_intel_is_missing(world):
    clone = world["clone"]
    # The binary goes away (Claude Code keeps a snapshot of the shell's
    # PATH, so taking the directory off PATH is not enough).
    link = world["bin_dir"] / "code-intel"
    hidden = world["bin_dir"] / "code-intel.hidden"
    link.rename(hidden)
    try:
        assert shutil.which("code-intel", path=world["env"]["PATH"]) is None, "code-intel is on PATH outside the test's bin dir"
        claude(world, clone, "Write a file. SCENARIO:missing")
    finally:
        hidden.rename(link)
    write = by_name(world["model"].results("missing"), "Write")[0]
    assert write["is_error"] is True, write
    assert not (clone / "app" / "while_missing.py").exists(), "the Write went through without the hook"
