"""`code-intel init --client` for the other MCP clients, checked by the
clients themselves where their CLI can: Gemini CLI (`gemini mcp list`
connects to the server) and Codex CLI (`codex mcp list`), both from npm
(scripts/lib/clients.sh). VS Code and Cursor have no CLI that lists servers:
their files are checked for the shape their documentation gives. The Gemini
hook command is run the way Gemini CLI runs it (`bash -c` with
GEMINI_PROJECT_DIR), with and without code-intel on PATH. Codex runs real
turns (`codex exec`) against a scripted stand-in for the OpenAI Responses API
on 127.0.0.1, so its hook on apply_patch and its shell tool runs for real."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import tomllib
from pathlib import Path

import pytest

from conftest import copy_fixture

GEMINI = os.environ.get("CODE_INTEL_GEMINI_BIN", "")
CODEX = os.environ.get("CODE_INTEL_CODEX_BIN", "")


@pytest.fixture
def setup(tmp_path, code_intel_bin):
    repo = copy_fixture("mini-repo", tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "code-intel").symlink_to(code_intel_bin)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODE_INTEL_", "GEMINI", "CODEX", "GOOGLE", "OPENAI"))}
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))
    env.update(
        HOME=str(home),
        PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        CODEX_HOME=str(home / ".codex"),
        CODE_INTEL_OFFLINE="1",
        CODE_INTEL_MODEL_DIR="/models/e5-small",
    )
    out = subprocess.run(
        [code_intel_bin, "init", "--client", "gemini,codex", "--client", "vscode", "--client", "cursor", str(repo)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return {"repo": repo.resolve(), "home": home, "env": env, "bin_dir": bin_dir, "report": out.stdout}


def test_project_files_have_each_clients_shape(setup):
    repo = setup["repo"]
    vscode = json.loads((repo / ".vscode" / "mcp.json").read_text())["servers"]["code-intel"]
    assert vscode == {
        "type": "stdio",
        "command": "code-intel",
        "args": ["serve", "--repo", "${workspaceFolder}"],
        "env": {"CODE_INTEL_MODEL_DIR": "/models/e5-small"},
    }
    cursor = json.loads((repo / ".cursor" / "mcp.json").read_text())["mcpServers"]["code-intel"]
    assert cursor["command"] == "code-intel" and cursor["args"][-1] == "${workspaceFolder}"
    hooks = json.loads((repo / ".cursor" / "hooks.json").read_text())
    assert hooks["version"] == 1 and "check-write --client cursor" in hooks["hooks"]["beforeShellExecution"][0]["command"]
    # The model folder is a path of this machine: the report says so.
    assert "CODE_INTEL_MODEL_DIR" in setup["report"] and "before you commit" in setup["report"]
    codex = tomllib.loads((setup["home"] / ".codex" / "config.toml").read_text())["mcp_servers"]["code-intel"]
    assert codex["args"] == ["serve"] and codex["env"] == {"CODE_INTEL_MODEL_DIR": "/models/e5-small"}
    assert Path(codex["command"]).name == "code-intel"


def gemini_hook(setup, tool: str, tool_input: dict, path: str) -> subprocess.CompletedProcess:
    settings = json.loads((setup["repo"] / ".gemini" / "settings.json").read_text())
    command = settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
    payload = {"hook_event_name": "BeforeTool", "cwd": str(setup["repo"]), "tool_name": tool, "tool_input": tool_input}
    env = dict(setup["env"], PATH=path, GEMINI_PROJECT_DIR=str(setup["repo"]), CLAUDE_PROJECT_DIR=str(setup["repo"]))
    return subprocess.run(["bash", "-c", command], input=json.dumps(payload), capture_output=True, text=True, env=env, cwd=setup["repo"], timeout=60)


def test_gemini_hook_blocks_writes_and_fails_closed(setup):
    path = setup["env"]["PATH"]
    write = gemini_hook(setup, "write_file", {"file_path": "app/new.py", "content": "x"}, path)
    assert write.returncode == 2 and "no active code-intel session" in write.stderr, write
    shell = gemini_hook(setup, "run_shell_command", {"command": "sed -i s/a/b/ app/models.py"}, path)
    assert shell.returncode == 2 and "app/models.py" in shell.stderr, shell
    look = gemini_hook(setup, "run_shell_command", {"command": "grep -rn User app | head"}, path)
    assert look.returncode == 0, look
    without = os.pathsep.join(p for p in path.split(os.pathsep) if p != str(setup["bin_dir"]))
    missing = gemini_hook(setup, "replace", {"file_path": "app/models.py", "old_string": "a", "new_string": "b"}, without)
    assert missing.returncode == 2 and "not on PATH" in missing.stderr, missing


@pytest.mark.skipif(not GEMINI, reason="Gemini CLI not installed: run scripts/test or set CODE_INTEL_GEMINI_BIN")
def test_gemini_mcp_list_shows_code_intel_connected(setup):
    # The user trusts the folder (Gemini CLI reads no project settings otherwise).
    (setup["home"] / ".gemini").mkdir(exist_ok=True)
    (setup["home"] / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(setup["repo"]): "TRUST_FOLDER"}))
    out = subprocess.run([GEMINI, "mcp", "list"], cwd=setup["repo"], env=setup["env"], capture_output=True, text=True, timeout=180)
    line = next((l for l in (out.stdout + out.stderr).splitlines() if "code-intel:" in l), "")
    assert "Connected" in line, out.stdout + out.stderr


@pytest.mark.skipif(not CODEX, reason="Codex CLI not installed: run scripts/test or set CODE_INTEL_CODEX_BIN")
def test_codex_mcp_list_shows_code_intel(setup):
    out = subprocess.run([CODEX, "mcp", "list"], cwd=setup["repo"], env=setup["env"], capture_output=True, text=True, timeout=120)
    line = next((l for l in out.stdout.splitlines() if l.startswith("code-intel ")), "")
    assert "serve" in line and "enabled" in line, out.stdout + out.stderr


def codex_hooks(setup) -> list[dict]:
    """The hooks Codex's app server lists for the repository (`hooks/list`)."""
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "code-intel-tests", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(setup["repo"])]}},
    ]
    proc = subprocess.Popen(
        [CODEX, "app-server"], cwd=setup["repo"], env=setup["env"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        for line in proc.stdout:
            message = json.loads(line)
            if message.get("id") == 2:
                assert "result" in message, message
                return [h for entry in message["result"]["data"] for h in entry["hooks"]]
        raise AssertionError("codex app-server closed without answering hooks/list")
    finally:
        proc.kill()
        proc.wait(timeout=30)


@pytest.mark.skipif(not CODEX, reason="Codex CLI not installed: run scripts/test or set CODE_INTEL_CODEX_BIN")
def test_codex_loads_the_write_gate_hook_of_a_trusted_project(setup):
    # An untrusted project's .codex/config.toml is not read at all.
    assert codex_hooks(setup) == []
    config = setup["home"] / ".codex" / "config.toml"
    config.write_text(config.read_text() + f'\n[projects."{setup["repo"]}"]\ntrust_level = "trusted"\n')
    hooks = codex_hooks(setup)
    assert len(hooks) == 1, hooks
    hook = hooks[0]
    assert hook["eventName"] == "preToolUse" and hook["source"] == "project" and hook["matcher"] is None, hook
    assert hook["command"].endswith("code-intel check-write --client codex") and hook["enabled"], hook
    # Codex asks the user to trust a new hook before it runs it.
    assert hook["trustStatus"] == "untrusted", hook
    # What the hook answers when it runs: an apply_patch is blocked, a read passes.
    payload = {
        "hook_event_name": "PreToolUse",
        "cwd": str(setup["repo"]),
        "tool_name": "apply_patch",
        "tool_input": {"command": "*** Begin Patch\n*** Update File: app/models.py\n@@\n-a\n+b\n*** End Patch\n"},
    }
    run = lambda p: subprocess.run(
        ["sh", "-c", hook["command"]], input=json.dumps(p), capture_output=True, text=True, env=setup["env"], cwd=setup["repo"], timeout=60
    )
    blocked = run(payload)
    assert blocked.returncode == 2 and "app/models.py" in blocked.stderr, blocked
    look = run(dict(payload, tool_name="shell", tool_input={"command": ["bash", "-lc", "grep -rn User app | head"]}))
    assert look.returncode == 0, look


class Responses:
    """A stand-in for the OpenAI Responses API: the first request of a turn
    is answered with `call` (one tool call), every later one with a final
    message; the outputs Codex sends back for the call are kept."""

    def __init__(self, call: dict):
        self.outputs: list[dict] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.reply("application/json", json.dumps({"data": [], "models": []}).encode())

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                outputs = [i for i in body.get("input", []) if str(i.get("type", "")).endswith("_output")]
                outer.outputs = outputs
                item = (
                    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                     "content": [{"type": "output_text", "text": "done", "annotations": []}]}
                    if outputs else dict(call, id="call_item_1", call_id="call_1", status="completed")
                )
                response = {"id": "resp_1", "object": "response", "status": "completed", "output": [item],
                            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
                events = [
                    ("response.created", {"type": "response.created", "response": dict(response, status="in_progress", output=[])}),
                    ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
                    ("response.completed", {"type": "response.completed", "response": response}),
                ]
                self.reply("text/event-stream", b"".join(f"event: {t}\ndata: {json.dumps(d)}\n\n".encode() for t, d in events))

            def reply(self, kind: str, data: bytes):
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def codex_turn(setup, call: dict, trusted_hooks: bool = True) -> str:
    """One `codex exec` turn in which the model makes `call`; what Codex
    answered the model for it."""
    standin = Responses(call)
    try:
        config = setup["home"] / ".codex" / "config.toml"
        text = config.read_text()
        if "model_provider" not in text:
            # Top-level keys first, then the tables init wrote.
            config.write_text(
                'model = "gpt-5.5"\nmodel_provider = "standin"\n\n' + text
                + f'\n[projects."{setup["repo"]}"]\ntrust_level = "trusted"\n'
            )
        # The provider table, last in the file, names this turn's port.
        text = config.read_text().split("\n[model_providers.standin]")[0]
        config.write_text(text.rstrip("\n") + f'\n\n[model_providers.standin]\nname = "standin"\nbase_url = "http://127.0.0.1:{standin.server.server_port}/v1"\nwire_api = "responses"\n')
        args = [CODEX, "exec", "--skip-git-repo-check", *(["--dangerously-bypass-hook-trust"] if trusted_hooks else []), "go"]
        run = subprocess.run(args, cwd=setup["repo"], env=setup["env"], capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        assert standin.outputs, run.stdout[-3000:] + run.stderr[-3000:]
        return json.dumps(standin.outputs)
    finally:
        standin.close()


PATCH = "*** Begin Patch\n*** Update File: app/models.py\n@@\n-\"\"\"User model and loading.\"\"\"\n+\"\"\"Changed.\"\"\"\n*** End Patch\n"


@pytest.mark.skipif(not CODEX, reason="Codex CLI not installed: run scripts/test or set CODE_INTEL_CODEX_BIN")
def test_codex_turns_are_gated_by_the_hook(setup):
    models = setup["repo"] / "app" / "models.py"
    before = models.read_text()
    # Codex's apply_patch tool (a freeform tool for this model): blocked without a session.
    answer = codex_turn(setup, {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH})
    assert "blocked by PreToolUse hook" in answer and "app/models.py" in answer and "no active code-intel session" in answer, answer
    # Its shell tool (exec_command, `Bash` to the hook): a write is blocked, a read runs.
    answer = codex_turn(setup, {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "sed -i s/User/Person/ app/models.py"})})
    assert "blocked by PreToolUse hook" in answer and "app/models.py" in answer, answer
    assert models.read_text() == before
    answer = codex_turn(setup, {"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "grep -c dataclass app/models.py"})})
    assert "blocked" not in answer and "Process exited with code 0" in answer, answer
    # The documented limit: until the user trusts the hook, Codex does not run it.
    answer = codex_turn(setup, {"type": "custom_tool_call", "name": "apply_patch", "input": PATCH}, trusted_hooks=False)
    assert "blocked" not in answer and "Changed." in models.read_text(), answer
