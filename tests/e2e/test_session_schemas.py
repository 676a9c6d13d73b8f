"""Every session tool's structured result against its published output schema.

The official Python client already checks each result against the tool's
`outputSchema`; these journeys go further: they reach every session tool in
each of its answer shapes (accepted and refused submissions, a rejected slot,
a submission and an outcome retried, an outcome replaced by a failure, an
outcome without an agreement, verdicts FACT and REJECTED), and check each result against a
strict copy of the schema in which no object may carry a property the schema
does not declare. A field added to a result but not to its type, or a value
of another type than declared, fails here."""

from __future__ import annotations

import copy

import pytest
from jsonschema import Draft202012Validator
from mcp.client.client import Client

from test_session_workflow import (
    QUERY,
    SLOTS,
    UNDERSTANDING,
    VAGUE_UNDERSTANDING,
    client_for,
    explore,
    explore_vague,
    hypothesis_from_semantic_search,
)

pytestmark = pytest.mark.anyio

SESSION_TOOLS = {
    "start_session", "set_query_frame", "query", "get_session_status", "submit_understanding",
    "validate_symbol_relevance", "submit_semantic", "submit_verification", "check_write_target",
    "add_explored_files", "revert_to_exploration", "record_outcome", "get_session_analysis",
    "get_improvement_insights",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def strict(schema: dict) -> dict:
    """The schema with `additionalProperties: false` on every object schema
    that lists its properties and says nothing about others."""
    out = copy.deepcopy(schema)

    def walk(node):
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(out)
    return out


class Recorder:
    """Calls tools and keeps every structured result, by tool."""

    def __init__(self, client: Client):
        self.client = client
        self.results: dict[str, list[dict]] = {}

    async def ok(self, tool: str, args: dict) -> dict:
        result = await self.client.call_tool(tool, args)
        assert not result.is_error, f"{tool}: {result.content}"
        data = result.structured_content
        assert isinstance(data, dict), f"{tool} returned no structured content"
        self.results.setdefault(tool, []).append(data)
        return data


async def precise_journey(r: Recorder):
    sid = (await r.ok("start_session", {"intent": "MODIFY", "query": QUERY}))["session_id"]
    bad = dict(SLOTS, observed_issue={"value": "crashes", "quote": "the service crashes"})
    rejected = await r.ok("set_query_frame", {"session_id": sid, "slots": bad})
    assert rejected["success"] is False and rejected["validation_errors"], rejected
    accepted = await r.ok("set_query_frame", {"session_id": sid, "slots": SLOTS})
    assert accepted["success"] is True and "validation_errors" not in accepted, accepted
    await r.ok("query", {"session_id": sid, "text": "where is the user renamed"})
    await r.ok("get_session_status", {"session_id": sid})
    early = await r.ok("submit_understanding", {"session_id": sid, **UNDERSTANDING})
    assert early["accepted"] is False and early["error"] == "inconsistent_evidence", early
    await explore(r.client, sid)
    await r.ok("find_definitions", {"symbol": "Invoice", "session_id": sid})
    rel = await r.ok("validate_symbol_relevance", {
        "session_id": sid,
        "symbols": ["UserService", "Invoice"],
        "relevant_symbols": ["UserService", "Invoice"],
        "code_evidence": "class UserService: rename(user_id, new_name) changes the user's name",
    })
    assert rel["confirmed"] == ["UserService"] and rel["refused_confirmations"][0]["symbol"] == "Invoice", rel
    assert rel["results"][1]["reinvestigation_guidance"]["next_actions"], rel
    sub = await r.ok("submit_understanding", {"session_id": sid, **UNDERSTANDING})
    assert sub["accepted"] is True and sub["next_phase"] == "READY", sub
    retry = await r.ok("submit_understanding", {"session_id": sid, **UNDERSTANDING})
    assert retry["already_submitted"] is True and retry["next_phase"] == "READY", retry
    await r.ok("check_write_target", {"session_id": sid, "path": "app/services.py"})
    await r.ok("check_write_target", {"session_id": sid, "path": "lib/Billing/Invoice.php"})
    await r.ok("add_explored_files", {"session_id": sid, "paths": ["lib/Billing/Invoice.php"]})
    first = await r.ok("record_outcome", {"session_id": sid, "outcome": "success", "analysis": "rename fixed"})
    assert first["agreement"]["written"] is True and first["learned_pairs"]["added"] >= 1, first
    retry = await r.ok("record_outcome", {"session_id": sid, "outcome": "success", "analysis": "rename fixed"})
    assert retry["already_recorded"] is True and retry["agreement"]["id"] == first["agreement"]["id"], retry
    failed = await r.ok("record_outcome", {"session_id": sid, "outcome": "failure", "analysis": "the rename broke login"})
    assert failed["replaces_outcome"] == "success" and failed["agreements_retracted"] == [first["agreement"]["id"]], failed
    await r.ok("get_session_analysis", {"session_id": sid})

    # A QUESTION has no target feature: success writes no agreement, and says why.
    qid = (await r.ok("start_session", {"intent": "QUESTION", "query": "How are users renamed?"}))["session_id"]
    question = await r.ok("record_outcome", {"session_id": qid, "outcome": "success", "analysis": "answered"})
    assert question["agreement"] == {"written": False, "why": question["agreement"]["why"]}, question
    await r.ok("record_outcome", {"session_id": (await r.ok("start_session", {"intent": "INVESTIGATE", "query": "user rename"}))["session_id"], "outcome": "partial"})
    await r.ok("get_improvement_insights", {"limit": 10})


async def vague_journey(r: Recorder, misplace: bool):
    sid = (await r.ok("start_session", {"intent": "MODIFY", "query": "Fix the user rename."}))["session_id"]
    await r.ok("set_query_frame", {"session_id": sid, "slots": {
        "target_feature": {"value": "user rename", "quote": "user rename"},
        "desired_action": {"value": "fix", "quote": "Fix"},
    }})
    await explore_vague(r.client, sid)
    sub = await r.ok("submit_understanding", {"session_id": sid, **VAGUE_UNDERSTANDING})
    assert sub["next_phase"] == "SEMANTIC", sub
    hypothesis = await hypothesis_from_semantic_search(r.client, sid)
    if misplace:
        hypothesis["file"], hypothesis["line"] = "app/views.py", 1
    await r.ok("submit_semantic", {"session_id": sid, "hypotheses": [hypothesis], "semantic_reason": "no_reference_found"})
    sem = await r.ok("submit_semantic", {"session_id": sid, "hypotheses": [hypothesis], "semantic_reason": "no_definition_found"})
    hyp_id = sem["hypotheses"][0]["id"]
    await r.ok("find_definitions", {"symbol": "load_user", "session_id": sid})
    await r.ok("search_text", {"pattern": "user.name = new_name", "session_id": sid})
    ver = await r.ok("submit_verification", {
        "session_id": sid,
        "results": [{"hypothesis": hyp_id, "confirmed": True, "evidence": {"tool": "find_definitions", "file": hypothesis["file"]}}],
        "slot_evidence": {"observed_issue": {"tool": "search_text", "params": {"pattern": "user.name = new_name"}, "result": "rename sets the name then saves"}},
        "resolved_frame": {"observed_issue": "the new name is not kept"},
    })
    if misplace:
        assert ver["verdicts"][0]["status"] == "REJECTED" and "note" in ver, ver
        await r.ok("revert_to_exploration", {"session_id": sid, "keep_results": False})
    else:
        assert ver["verdicts"][0]["status"] == "FACT" and "site" in ver["verdicts"][0], ver
        assert ver["next_phase"] == "READY", ver


async def test_every_session_result_matches_its_output_schema(code_intel_bin, mini_repo):
    async with client_for(code_intel_bin, mini_repo) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert SESSION_TOOLS <= set(tools), set(tools) ^ SESSION_TOOLS
        missing = sorted(name for name in SESSION_TOOLS if not tools[name].output_schema)
        assert missing == [], f"session tools without an output schema: {missing}"

        r = Recorder(client)
        await r.ok("sync_index", {})
        await precise_journey(r)
        await vague_journey(r, misplace=False)
        await vague_journey(r, misplace=True)

        assert SESSION_TOOLS <= set(r.results), sorted(SESSION_TOOLS - set(r.results))
        checked = 0
        for tool in sorted(SESSION_TOOLS):
            validator = Draft202012Validator(strict(tools[tool].output_schema))
            for data in r.results[tool]:
                errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
                assert not errors, f"{tool}: {errors[0].message} at {list(errors[0].absolute_path)}\n{data}"
                checked += 1
        assert checked >= 30, checked


def test_the_strict_copy_refuses_what_the_schema_does_not_declare():
    """The check above can fail: an undeclared field and a wrong type are refused."""
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {"type": "integer"}}}}}
    validator = Draft202012Validator(strict(schema))
    assert validator.is_valid({"a": {"b": 1}})
    assert not validator.is_valid({"a": {"b": 1}, "c": 2})
    assert not validator.is_valid({"a": {"b": 1, "d": None}})
    assert not validator.is_valid({"a": {"b": None}})
