"""The durability runner's bounded run (bench/durability/run.py --quick): the
real binary killed with SIGKILL during `index` (warm and cold), two `index`
processes at once, on a generated 200-file tree, each result compared with an
index that was never interrupted; and `serve` killed during a session's
workflow, nothing the client was told lost. About ten seconds; the runner also damages
an index on purpose and fails unless its checks notice."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_kill_9_and_concurrent_index_leave_a_whole_index(code_intel_bin, tmp_path):
    out = tmp_path / "durability.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "durability" / "run.py"), "--quick", "--seed", "7",
         "--bin", code_intel_bin, "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["failures"] == [], summary
    assert summary["kills"] == 5 and summary["cold_kills"] >= 1 and summary["concurrent"] == 3, summary
    assert summary["hangs"] == 0 and summary["integrity_failures"] == 0 and summary["differences"] == 0, summary
    assert summary["serve_kills"] == 5 and summary["serve_failures"] == 0, summary


def test_no_path_argument_reaches_outside_the_repository(code_intel_bin, tmp_path):
    """bench/durability/escapes.py: every path argument of every tool, given
    each way out of the repository (`..`, absolute paths, symlinks out,
    encodings, NUL, ...), shows nothing from outside it."""
    out = tmp_path / "escapes.json"
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "durability" / "escapes.py"), "--bin", code_intel_bin, "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["leaks"] == 0 and summary["unanswered"] == 0, summary
    assert summary["path_arguments"] >= 11 and summary["calls"] >= 11 * summary["variants"], summary
