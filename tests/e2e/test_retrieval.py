"""Ranking regression check: the retrieval benchmark's method
(bench/retrieval/run.py) on the fixture projects, with the real test model,
through `code-intel index` and `code-intel search --json` as a user runs them.

Requests are in bench/retrieval/fixtures.jsonl (English and Japanese change
requests, bug reports and questions, each with the file that answers it).
The thresholds sit a little under what the current ranking measures, so a
change that makes ranking worse fails here; bench/retrieval/run.py measures
the real repositories.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, copy_fixture, server_env

sys.path.insert(0, str(ROOT / "bench" / "retrieval"))
import run as bench  # noqa: E402

MODES = ["lexical", "semantic", "hybrid"]

# Floors under what the default model (with the English model for English
# requests, as `scripts/demo` sets it up) measures on these fixtures with
# `code-intel search -n 10` (lexical R@5 0.84 / MRR 0.59, semantic 0.88 /
# 0.64, hybrid 0.91 / 0.67; 0.94 / 0.69 with keyword and vector weighted
# alike, one request a place lower since): a change that makes ranking
# clearly worse fails here.
# The fixtures are small and their files alike, so one request moving one
# place is ~0.03 of R@5.
MIN_HYBRID_R5 = 0.84
MIN_HYBRID_MRR = 0.62
# How far hybrid may trail the better arm: today it leads both. (It trailed
# lexical by 0.18 of R@5 while real bug reports whose words this small
# project does not use were refused as gibberish.)
HYBRID_SLACK = 0.04
# Off-topic and gibberish requests refused on the fixtures: 48 of 48 today
# (bench/retrieval/queries/offtopic.jsonl on both fixture projects).
MIN_REFUSED = 0.9


def mean(rows: list[dict], key: str) -> float:
    return sum(float(r[key]) for r in rows) / len(rows)


@pytest.fixture(scope="module")
def results(code_intel_bin: str, tmp_path_factory) -> dict:
    env = server_env()
    if not env.get("CODE_INTEL_MODEL_DIR"):
        pytest.fail("CODE_INTEL_TEST_MODEL_DIR is not set: run through scripts/test, which installs the test model")
    requests = bench.load_jsonl(ROOT / "bench" / "retrieval" / "fixtures.jsonl")
    offtopic = bench.load_jsonl(ROOT / "bench" / "retrieval" / "queries" / "offtopic.jsonl")
    tmp = tmp_path_factory.mktemp("retrieval")
    out: dict = {"modes": {m: [] for m in MODES}, "refused": []}
    for name in sorted({r["repo"] for r in requests}):
        repo = copy_fixture(name, tmp)
        subprocess.run([code_intel_bin, "index", str(repo)], check=True, env=env, capture_output=True)
        scores = bench.evaluate(code_intel_bin, repo, [r for r in requests if r["repo"] == name], MODES, env=env)
        for mode in MODES:
            out["modes"][mode].extend(scores[mode])
        for o in offtopic:
            out["refused"].append(bool(bench.ask(code_intel_bin, repo, o["query"], "hybrid", env).get("no_confident_match")))
    summary = {m: {"R@5": mean(rows, "r5"), "MRR": mean(rows, "rr")} for m, rows in out["modes"].items()}
    print(json.dumps(summary, indent=1), f"off-topic refused {sum(out['refused'])} of {len(out['refused'])}")
    out["summary"] = summary
    return out


def test_hybrid_finds_the_answer_file(results: dict) -> None:
    hybrid = results["summary"]["hybrid"]
    misses = [r["id"] for r in results["modes"]["hybrid"] if not r["r5"]]
    assert hybrid["R@5"] >= MIN_HYBRID_R5, f"hybrid R@5 {hybrid['R@5']:.2f} < {MIN_HYBRID_R5}; missed: {misses}"
    assert hybrid["MRR"] >= MIN_HYBRID_MRR, f"hybrid MRR {hybrid['MRR']:.2f} < {MIN_HYBRID_MRR}"


def test_real_requests_are_not_refused(results: dict) -> None:
    refused = [r["id"] for r in results["modes"]["hybrid"] if r["refused"]]
    assert not refused, f"real requests answered 'no confident match': {refused}"


def test_hybrid_is_not_worse_than_its_arms(results: dict) -> None:
    s = results["summary"]
    for metric in ("R@5", "MRR"):
        best = max(s["lexical"][metric], s["semantic"][metric])
        assert s["hybrid"][metric] >= best - HYBRID_SLACK, f"hybrid {metric} {s['hybrid'][metric]:.2f} vs best arm {best:.2f}: {s}"


def test_japanese_requests_are_answered(results: dict) -> None:
    ja = [r for r in results["modes"]["hybrid"] if r["lang"] == "ja"]
    assert ja, "the fixture set has Japanese requests"
    assert mean(ja, "r5") >= MIN_HYBRID_R5 - 0.2, [r["id"] for r in ja if not r["r5"]]


def test_gibberish_and_off_topic_requests_are_refused(results: dict) -> None:
    refused = results["refused"]
    share = sum(refused) / len(refused)
    assert share >= MIN_REFUSED, f"only {sum(refused)} of {len(refused)} off-topic requests answered 'no confident match'"
