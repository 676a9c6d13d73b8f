"""Shared fixtures for the end-to-end tests.

Every test starts the real `code-intel serve` binary as a subprocess and
talks to it over stdio, either with the official Python MCP client or with
a raw JSON-RPC driver (for malformed input and concurrency).

The binary is taken from CODE_INTEL_BIN, else from the cargo target dir.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"


def binary() -> str:
    explicit = os.environ.get("CODE_INTEL_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(Path(target) / "release" / "code-intel")


@pytest.fixture(scope="session")
def code_intel_bin() -> str:
    path = binary()
    if not os.access(path, os.X_OK):
        pytest.fail(f"code-intel binary not found at {path}; build it with `cargo build --release -p code-intel` or set CODE_INTEL_BIN")
    return path


def copy_fixture(name: str, dest: Path) -> Path:
    """A private copy of a fixture tree (the server writes .code-intel/ into it)."""
    target = dest / name
    shutil.copytree(FIXTURES / name, target, symlinks=True, ignore=shutil.ignore_patterns(".code-intel"))
    return target


@pytest.fixture
def mini_repo(tmp_path: Path) -> Path:
    return copy_fixture("mini-repo", tmp_path)


def server_env() -> dict:
    """The server's environment: no model hub (tests never download); the
    test model, when scripts/fetch-test-model provided one, as the model."""
    env = dict(os.environ)
    env.setdefault("CODE_INTEL_LOG", "warn")
    env["CODE_INTEL_OFFLINE"] = "1"
    model = os.environ.get("CODE_INTEL_TEST_MODEL_DIR")
    if model:
        env["CODE_INTEL_MODEL_DIR"] = model
    # The English model as a user has it (scripts/fetch-english-model), named
    # explicitly so that no test depends on what the models folder holds.
    english = os.environ.get("CODE_INTEL_MINILM_MODEL_DIR")
    if english:
        env["CODE_INTEL_ENGLISH_MODEL_DIR"] = english
    return env


def server_params(bin_path: str, repo: Path, *extra: str):
    from mcp.client.stdio import StdioServerParameters

    env = server_env()
    return StdioServerParameters(command=bin_path, args=["serve", "--repo", str(repo), *extra], env=env)


class RawServer:
    """`code-intel serve` driven with hand-written JSON-RPC lines."""

    def __init__(self, bin_path: str, repo: Path, *extra: str):
        env = server_env()
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [bin_path, "serve", "--repo", str(repo), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        self._lines: list[dict] = []
        self._cond = threading.Condition()
        self.stdout_garbage: list[bytes] = []
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._next_id = 1000

    def _read_stdout(self):
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.stdout_garbage.append(line)
                continue
            with self._cond:
                self._lines.append(msg)
                self._cond.notify_all()

    def _read_stderr(self):
        for line in self.proc.stderr:
            self.stderr.append(line)

    def send_raw(self, data: bytes):
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, msg: dict):
        self.send_raw(json.dumps(msg).encode() + b"\n")

    def request(self, method: str, params: dict | None = None, *, id=None) -> int:
        if id is None:
            self._next_id += 1
            id = self._next_id
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return id

    def wait_for(self, pred, timeout: float = 20.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for msg in self._lines:
                    if pred(msg):
                        self._lines.remove(msg)
                        return msg
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no matching message; got {self._lines!r}; stderr={b''.join(self.stderr)[-2000:]!r}")
                self._cond.wait(remaining)

    def response(self, id, timeout: float = 20.0) -> dict:
        return self.wait_for(lambda m: m.get("id") == id and ("result" in m or "error" in m), timeout)

    def call(self, method: str, params: dict | None = None, timeout: float = 20.0) -> dict:
        return self.response(self.request(method, params), timeout)

    def initialize(self, version: str = "2025-06-18") -> dict:
        resp = self.call(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw-e2e", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return resp

    def rss_kib(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def close(self, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        return self.proc.returncode


@pytest.fixture
def raw_server(code_intel_bin):
    servers: list[RawServer] = []

    def start(repo: Path, *extra: str) -> RawServer:
        server = RawServer(code_intel_bin, repo, *extra)
        servers.append(server)
        return server

    yield start
    for server in servers:
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def tool_text(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def wait_vectors_ready(client, timeout: float = 180):
    """Waits for the background embedding pass to cover every chunk."""
    import anyio

    status = {}
    with anyio.move_on_after(timeout):
        while True:
            result = await client.call_tool("index_status", {})
            assert not result.is_error, tool_text(result)
            status = result.structured_content or {}
            if status.get("vector_search") == "ready":
                break
            await anyio.sleep(0.5)
    assert status.get("vector_search") == "ready", status
