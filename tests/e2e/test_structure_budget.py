"""`analyze_structure` under a small output budget: what fits is returned,
the cut is said (`truncated`, `next_from_line`, a note), and continuing
from `next_from_line` returns the rest, so no symbol is lost."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp.client.client import Client

from conftest import server_params, tool_text

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def seven_hundred_lines(repo: Path) -> None:
    """A Python module of 700 lines: 10 classes of 10 methods each."""
    lines = []
    for c in range(10):
        lines.append(f"class Service{c}:")
        lines.append(f'    """Service number {c}."""')
        for m in range(10):
            lines += [
                f"    def handle_request_{c}_{m}(self, request, context, options=None):",
                f"        value = request.get('field_{m}')",
                "        if value is None:",
                "            return None",
                f"        return context.process(value, {m})",
                "",
            ]
        lines += ["", "", "", "", "", "", "", ""]
    assert len(lines) == 700, len(lines)
    (repo / "big.py").write_text("\n".join(lines) + "\n")


def names(symbols: list) -> list[str]:
    out = []
    for s in symbols:
        out.append(s["name"])
        out += names(s.get("children", []))
    return out


async def test_small_max_chars_pages_through_a_700_line_file(code_intel_bin, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    seven_hundred_lines(repo)
    async with Client(server_params(code_intel_bin, repo), mode="legacy", read_timeout_seconds=60) as client:
        synced = await client.call_tool("sync_index", {})
        assert not synced.is_error, tool_text(synced)

        full = await client.call_tool("analyze_structure", {"path": "big.py", "max_chars": 200000})
        everything = names(full.structured_content["files"][0]["symbols"])
        methods = [n for n in everything if n.startswith("handle_request_")]
        assert len(methods) == 100, everything
        assert full.structured_content["truncated"] is False

        seen: list[str] = []
        args = {"path": "big.py", "max_chars": 3000}
        pages = 0
        while True:
            page = await client.call_tool("analyze_structure", args)
            assert not page.is_error, tool_text(page)
            data = page.structured_content
            assert len(tool_text(page)) > 0
            got = [n for n in names(data["files"][0]["symbols"]) if n.startswith("handle_request_")]
            assert got, f"page {pages} holds no method: {data}"
            seen += got
            pages += 1
            if not data["truncated"]:
                assert "next_from_line" not in data
                break
            assert data["next_from_line"] > args.get("from_line", 0), data
            assert any("from_line" in note for note in data["notes"]), data["notes"]
            args = {"path": "big.py", "max_chars": 3000, "from_line": data["next_from_line"]}
            assert pages < 50
        assert pages > 1, "3,000 characters should not hold 110 symbols"
        assert sorted(set(seen)) == sorted(methods), "every method is on some page"

        refused = await client.call_tool("analyze_structure", {"path": ".", "from_line": 3})
        assert refused.is_error and "from_line" in tool_text(refused)
