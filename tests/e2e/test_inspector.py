"""MCP Inspector CLI (`--cli --strict`) against `code-intel serve`.

The Inspector reports tool-schema portability problems (bare `true`
schemas, properties without a type, ...) and exits 6 on an error-severity
one; this test requires a clean report: exit 0, no error and no warning.
It also calls tools through the Inspector, so arguments it builds from the
schemas are accepted and the results are what the output schemas say.

The Inspector and the Node.js it needs come from scripts/lib/inspector.sh
(CODE_INTEL_INSPECTOR_NODE, CODE_INTEL_INSPECTOR); scripts/test sets them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

NODE = os.environ.get("CODE_INTEL_INSPECTOR_NODE")
INSPECTOR = os.environ.get("CODE_INTEL_INSPECTOR")

pytestmark = pytest.mark.skipif(
    not (NODE and INSPECTOR),
    reason="MCP Inspector not set up (source scripts/lib/inspector.sh and run setup_inspector, as scripts/test does)",
)

CODE_TOOLS = {
    "search_text",
    "find_definitions",
    "find_references",
    "analyze_structure",
    "get_function_at_line",
    "repo_map",
    "semantic_search",
    "sync_index",
    "index_status",
}


def inspector(code_intel_bin: str, repo: Path, *args: str, serve_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    command = [
        NODE,
        INSPECTOR,
        "--cli",
        *args,
        # The Inspector starts the server with a minimal environment.
        "-e",
        "CODE_INTEL_OFFLINE=1",
        "-e",
        "CODE_INTEL_LOG=warn",
        "--",
        code_intel_bin,
        "serve",
        "--repo",
        str(repo),
        *serve_args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=repo)


def problems(stderr: str) -> list[str]:
    """The Inspector's findings: lines starting `Warning:` or `Error:`, and
    its summary line (`N errors, M warnings ...`) when it printed one."""
    return [
        line
        for line in stderr.splitlines()
        if line.startswith(("Warning:", "Error:")) or " warning" in line and "error" in line and "across" in line
    ]


def test_strict_tools_list_is_clean(code_intel_bin, mini_repo):
    run = inspector(code_intel_bin, mini_repo, "--method", "tools/list", "--strict")
    assert run.returncode == 0, f"exit {run.returncode}\nstdout: {run.stdout[-2000:]}\nstderr: {run.stderr[-4000:]}"
    assert problems(run.stderr) == [], run.stderr
    tools = json.loads(run.stdout)["tools"]
    names = {t["name"] for t in tools}
    assert CODE_TOOLS <= names, names
    assert len(names) >= 23, names
    for tool in tools:
        hints = tool.get("annotations") or {}
        assert hints.get("readOnlyHint") is True or hints.get("destructiveHint") is False, tool["name"]
        if tool["name"] in CODE_TOOLS:
            assert "outputSchema" in tool, f"{tool['name']} has no output schema"


def test_strict_tools_list_of_the_code_profile_is_clean(code_intel_bin, mini_repo):
    run = inspector(code_intel_bin, mini_repo, "--method", "tools/list", "--strict", serve_args=("--tools", "code"))
    assert run.returncode == 0, run.stderr[-4000:]
    assert problems(run.stderr) == [], run.stderr
    names = {t["name"] for t in json.loads(run.stdout)["tools"]}
    assert names == CODE_TOOLS


def test_tool_calls_through_the_inspector(code_intel_bin, mini_repo):
    run = inspector(
        code_intel_bin,
        mini_repo,
        "--method",
        "tools/call",
        "--tool-name",
        "find_definitions",
        "--tool-arg",
        "symbol=UserService",
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout)
    assert not result.get("isError"), result
    files = [d["path"] for d in result["structuredContent"]["definitions"]]
    assert "app/services.py" in files, result

    run = inspector(
        code_intel_bin,
        mini_repo,
        "--method",
        "tools/call",
        "--tool-name",
        "start_session",
        "--tool-arg",
        "intent=QUESTION",
        "query=What does UserService.rename do?",
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout)
    assert not result.get("isError"), result
    assert result["structuredContent"]["phase"] == "READY", result
    assert result["structuredContent"]["session_id"].startswith("ses-"), result
