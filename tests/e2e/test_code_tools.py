"""The code tools over stdio with the official MCP client, in both protocol
lifecycles: the `initialize` handshake (what Claude Code uses) and the
2026-07-28 discover lifecycle (what the Python client picks by default)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from mcp.client.client import Client

from conftest import copy_fixture, server_params, tool_text, wait_vectors_ready

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]

CODE_TOOLS = {
    "search_text",
    "find_definitions",
    "find_references",
    "analyze_structure",
    "get_function_at_line",
    "semantic_search",
    "sync_index",
    "index_status",
    "repo_map",
}


@pytest.fixture
def anyio_backend():
    return "asyncio"


def client_for(bin_path: str, repo: Path, mode: str) -> Client:
    return Client(server_params(bin_path, repo), mode=mode, read_timeout_seconds=60)


async def call(client: Client, tool: str, args: dict):
    result = await client.call_tool(tool, args)
    return result, (result.structured_content or {}), tool_text(result)


async def wait_indexed(client: Client):
    """The server syncs in the background; sync_index waits for it."""
    result, data, text = await call(client, "sync_index", {})
    assert not result.is_error, text


def union_types(schema, path="") -> list[str]:
    found = []
    if isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(path)
        for key, value in schema.items():
            found += union_types(value, f"{path}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            found += union_types(value, f"{path}/{i}")
    return found


@pytest.mark.parametrize("mode", MODES)
async def test_lists_tools_with_portable_schemas_and_annotations(code_intel_bin, mini_repo, mode):
    async with client_for(code_intel_bin, mini_repo, mode) as client:
        if mode == "legacy":
            assert client.protocol_version <= "2025-11-25"
            assert "find_definitions" in (client.instructions or "")
        else:
            assert client.protocol_version >= "2026-07-28"
        tools = (await client.list_tools()).tools
        names = {t.name for t in tools}
        assert CODE_TOOLS <= names, names
        for tool in tools:
            assert tool.input_schema["type"] == "object"
            assert union_types(tool.input_schema) == [], (tool.name, tool.input_schema)
            assert "$ref" not in str(tool.input_schema), tool.name
            assert tool.description
            if tool.name in CODE_TOOLS:
                assert tool.annotations is not None, tool.name
                expected_read_only = tool.name != "sync_index"
                assert tool.annotations.read_only_hint is expected_read_only, tool.name
                assert tool.output_schema is not None, tool.name


@pytest.mark.parametrize("mode", MODES)
async def test_every_code_tool_on_the_fixture(code_intel_bin, mini_repo, mode):
    async with client_for(code_intel_bin, mini_repo, mode) as client:
        await wait_indexed(client)

        # search_text: regex, literal, glob, ignore rules, context lines.
        r, data, text = await call(client, "search_text", {"pattern": r"def \w+_user\(", "context_lines": 1})
        assert not r.is_error, text
        paths = {m["path"] for m in data["matches"]}
        assert paths == {"app/models.py", "app/views.py"}, paths
        assert "build/generated.py" not in text  # .gitignore'd
        first = data["matches"][0]
        assert first["before"] and first["after"]
        assert "app/models.py" in text
        r, data, _ = await call(client, "search_text", {"pattern": "a.b", "literal": True})
        assert data["matches"] == []
        r, data, _ = await call(client, "search_text", {"pattern": "total", "file_types": ["php"], "word": True})
        assert {m["path"] for m in data["matches"]} == {"lib/Billing/Invoice.php", "lib/Billing/InvoiceService.php"}

        # find_definitions: kind, file, lines, signature, scope.
        r, data, text = await call(client, "find_definitions", {"symbol": "User"})
        assert not r.is_error, text
        user = [d for d in data["definitions"] if d["path"] == "app/models.py"]
        assert user and user[0]["kind"] == "class" and user[0]["start_line"] <= 8 <= user[0]["end_line"], data
        # A Python-style qualified name finds PHP's `App\\Billing\\Invoice::total` exactly.
        r, data, _ = await call(client, "find_definitions", {"symbol": "Invoice.total"})
        assert data["match_used"] == "exact", data
        assert [(d["path"], d["name"], d["kind"]) for d in data["definitions"]] == [("lib/Billing/Invoice.php", "total", "method")], data
        r, data, _ = await call(client, "find_definitions", {"symbol": "lod_user"})
        assert data["match_used"] == "fuzzy"
        assert any(d["name"] == "load_user" for d in data["definitions"]), data

        # find_references: usages minus the definition, grouped by enclosing chunk.
        r, data, text = await call(client, "find_references", {"symbol": "load_user"})
        assert not r.is_error, text
        assert data["definitions_excluded"] and data["definitions_excluded"][0]["path"] == "app/models.py"
        enclosing = {(g["path"], (g.get("enclosing") or {}).get("name")) for g in data["groups"]}
        assert ("app/services.py", "rename") in enclosing, enclosing
        assert ("app/services.py", "greeting") in enclosing, enclosing
        assert not any(g["path"] == "build/generated.py" for g in data["groups"])

        # analyze_structure: nested outline of a file and of a directory.
        r, data, text = await call(client, "analyze_structure", {"path": "app/models.py"})
        assert not r.is_error, text
        outline = data["files"][0]["symbols"]
        user = next(s for s in outline if s["name"] == "User")
        assert {c["name"] for c in user.get("children", [])} >= {"display_name", "save"}, outline
        r, data, _ = await call(client, "analyze_structure", {"path": "lib"})
        assert {f["path"] for f in data["files"]} == {"lib/Billing/Invoice.php", "lib/Billing/InvoiceService.php"}

        # get_function_at_line: the method around line 20 of models.py (save).
        r, data, text = await call(client, "get_function_at_line", {"path": "app/models.py", "line": 20})
        assert not r.is_error, text
        assert data["function"]["name"] == "save", data
        assert "db.put" in data["function"]["code"]
        assert [s["name"] for s in data["enclosing"]] [-1:] == ["User"], data

        # repo_map: ranked overview within budget.
        r, data, text = await call(client, "repo_map", {"max_tokens": 256})
        assert not r.is_error, text
        assert data["tokens_estimated"] <= 256
        assert data["symbols_shown"] >= 3
        assert "app/models.py" in data["map"]

        # semantic_search: results, and says how complete the vector index is.
        r, data, text = await call(client, "semantic_search", {"query": "rename a user", "n_results": 5})
        assert not r.is_error, text
        assert data["vector_search"], data
        assert data["confidence"] == "HYPOTHESIS"
        assert any(h["name"] == "rename" for h in data["results"]), data

        # index_status: counts.
        r, data, text = await call(client, "index_status", {})
        assert not r.is_error, text
        assert data["files"] >= 6 and data["chunks"] > 0, data
        assert data["index"]["state"] == "ready", data


async def test_sync_reports_changes_and_progress(code_intel_bin, mini_repo):
    async with client_for(code_intel_bin, mini_repo, "legacy") as client:
        await wait_indexed(client)
        (mini_repo / "app" / "extra.py").write_text("def brand_new_function():\n    return 1\n")
        (mini_repo / "app" / "views.py").write_text((mini_repo / "app" / "views.py").read_text() + "\n# touched\n")
        (mini_repo / "README.md").unlink()
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        result = await client.call_tool("sync_index", {}, progress_callback=on_progress)
        data = result.structured_content
        assert not result.is_error, tool_text(result)
        assert (data["added"], data["modified"], data["deleted"]) == (1, 1, 1), data
        assert progress, "no progress notifications"
        r, data, _ = await call(client, "find_definitions", {"symbol": "brand_new_function"})
        assert data["definitions"][0]["path"] == "app/extra.py"


@pytest.mark.parametrize("mode", MODES)
async def test_argument_errors_are_tool_errors_naming_the_argument(code_intel_bin, mini_repo, mode):
    outside = mini_repo.parent / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 'load_user'\n")
    os.symlink(outside, mini_repo / "escape")
    async with client_for(code_intel_bin, mini_repo, mode) as client:
        await wait_indexed(client)
        cases = [
            ("search_text", {"pattern": "x", "max_results": "ten"}, "max_results"),
            ("search_text", {"pattern": "x", "max_results": 0}, "max_results"),
            ("search_text", {"patern": "x"}, "patern"),
            ("search_text", {"pattern": "(unclosed"}, "pattern"),
            ("search_text", {"pattern": "x", "file_types": ["klingon"]}, "file_types"),
            ("search_text", {"pattern": "x", "path": "../"}, "path"),
            ("search_text", {"pattern": "x", "path": "/etc"}, "path"),
            ("search_text", {"pattern": "SECRET", "path": "escape"}, "path"),
            ("search_text", {"pattern": "SECRET", "path": "escape/secret.py"}, "path"),
            ("find_definitions", {"symbol": 42}, "symbol"),
            ("find_definitions", {}, "symbol"),
            ("find_references", {"symbol": "load_user", "path": "app/../../"}, "path"),
            ("analyze_structure", {"path": "/etc/passwd"}, "path"),
            ("analyze_structure", {"path": "escape"}, "path"),
            ("get_function_at_line", {"path": "app/models.py", "line": -3}, "line"),
            ("get_function_at_line", {"path": "app/models.py", "line": 0}, "line"),
            ("get_function_at_line", {"path": "app/models.py", "line": 99999}, "line"),
            ("get_function_at_line", {"path": "escape/secret.py", "line": 1}, "path"),
            ("repo_map", {"max_tokens": 1}, "max_tokens"),
            ("repo_map", {"focus": ["../x"]}, "focus"),
            # The index and session records are never searched, even when asked for.
            ("search_text", {"pattern": "a", "path": ".code-intel"}, "never searched"),
            ("search_text", {"pattern": "a", "path": "./.code-intel/agreements"}, "never searched"),
            ("find_references", {"symbol": "load_user", "path": ".code-intel"}, "never searched"),
            # Size limits, refused before any work: each error names the limit.
            ("search_text", {"pattern": "x" * 4097, "literal": True}, "the limit is 4096"),
            ("search_text", {"pattern": "x" * 1_000_000, "literal": True}, "the limit is 4096"),
            ("find_definitions", {"symbol": "A" * 200_000}, "the limit is 1000"),
            ("find_references", {"symbol": "A" * 1001}, "the limit is 1000"),
            ("semantic_search", {"query": "where " * 4000}, "the limit is 20000"),
        ]
        for tool, args, argument in cases:
            result = await client.call_tool(tool, args)
            text = tool_text(result)
            assert result.is_error, (tool, args, text)
            assert argument in text, (tool, args, text)
            # A refusal never says where a symlink points outside the root.
            assert str(outside) not in text and str(outside.resolve()) not in text, (tool, args, text)
        # Nothing outside the root ever shows up: the walker does not follow the symlink.
        r, data, _ = await call(client, "search_text", {"pattern": "SECRET"})
        assert data["matches"] == [], data


async def test_budgets_truncate_explicitly(code_intel_bin, mini_repo):
    many = "\n".join(f"needle_{i} = {i}" for i in range(3000))
    (mini_repo / "big.py").write_text(many + "\n")
    async with client_for(code_intel_bin, mini_repo, "legacy") as client:
        await wait_indexed(client)
        r, data, text = await call(client, "search_text", {"pattern": "needle_", "max_results": 10})
        assert len(data["matches"]) == 10 and data["truncated"] is True
        r, data, text = await call(client, "search_text", {"pattern": "needle_", "max_results": 1000, "max_chars": 2000})
        assert data["truncated"] is True
        assert len(r.content[0].text) <= 4000 and len(str(data)) <= 4000
        assert "output budget" in text


async def test_unknown_tool_is_a_protocol_error(code_intel_bin, mini_repo):
    from mcp.shared.exceptions import MCPError

    async with client_for(code_intel_bin, mini_repo, "legacy") as client:
        with pytest.raises(MCPError) as err:
            await client.call_tool("no_such_tool", {})
        assert "no_such_tool" in str(err.value)
        assert "search_text" in str(err.value)


async def test_semantic_search_uses_vectors_once_embedded(code_intel_bin, mini_repo):
    """With a model (scripts/fetch-test-model), chunks are embedded in the
    background after the sync and semantic_search becomes hybrid."""
    import anyio

    if not os.environ.get("CODE_INTEL_TEST_MODEL_DIR"):
        pytest.skip("no test model: run scripts/fetch-test-model and export CODE_INTEL_TEST_MODEL_DIR")
    async with client_for(code_intel_bin, mini_repo, "legacy") as client:
        await wait_indexed(client)
        status = {}
        with anyio.move_on_after(180):
            while True:
                _, status, _ = await call(client, "index_status", {})
                if status["vector_search"] == "ready":
                    break
                await anyio.sleep(0.5)
        assert status["vector_search"] == "ready", status
        r, data, text = await call(client, "semantic_search", {"query": "change the name of a person", "n_results": 5})
        assert not r.is_error, text
        assert data["mode"] == "hybrid", data
        assert data["vector_search"] == "ready"
        assert any(h["source"] in ("vector", "hybrid") for h in data["results"]), data
        assert any(h["name"] in ("rename", "rename_user") for h in data["results"]), data
        r, data, _ = await call(client, "semantic_search", {"query": "xqzzv kjhgf", "n_results": 5})
        assert data["results"] == [] or data["notes"], data
        # The embedding pass ends by computing the chunk densities the vector
        # ranking takes hubs down by, kept beside the vector snapshots.
        vectors = Path(mini_repo) / ".code-intel" / "vectors"
        with anyio.move_on_after(60):
            while not list(vectors.glob("forest-densities-*.bin")):
                await anyio.sleep(0.5)
        kept = list(vectors.glob("forest-densities-*.bin"))
        assert len(kept) == 1, sorted(p.name for p in vectors.glob("*"))
        assert kept[0].stat().st_size > 32, kept[0].stat().st_size


async def test_sync_reports_embedding_progress(code_intel_bin, mini_repo):
    """With a progress token and a model, sync_index reports the embedding
    phase after chunking (same token, never going back) and answers once the
    new chunks are searchable by meaning."""
    if not os.environ.get("CODE_INTEL_TEST_MODEL_DIR"):
        pytest.skip("no test model: run scripts/fetch-test-model and export CODE_INTEL_TEST_MODEL_DIR")
    async with client_for(code_intel_bin, mini_repo, "legacy") as client:
        await wait_indexed(client)
        await wait_vectors_ready(client)
        # 40 new files of 4 functions each: enough chunks for several notifications.
        for i in range(40):
            body = "\n\n".join(
                f"def shipment_{i}_{j}(parcel):\n    \"\"\"Book courier pickup {j} for warehouse {i}.\"\"\"\n    return parcel.weight * {j + 1}\n"
                for j in range(4)
            )
            (mini_repo / "app" / f"shipping_{i}.py").write_text(body)
        progress = []

        async def on_progress(done, total, message):
            progress.append((done, total, message))

        result = await client.call_tool("sync_index", {}, progress_callback=on_progress)
        data = result.structured_content
        assert not result.is_error, tool_text(result)
        assert data["added"] == 40, data
        messages = [m for _, _, m in progress]
        embedding = [(d, t, m) for d, t, m in progress if m.startswith("embedding ")]
        assert any(m.startswith("indexing ") for m in messages), messages
        assert len(embedding) >= 2, messages
        # Chunking first, then embedding, on one monotonic count.
        first_embedding = messages.index(embedding[0][2])
        assert all(not m.startswith("embedding ") for m in messages[:first_embedding]), messages
        values = [d for d, _, _ in progress]
        assert values == sorted(values), progress
        done, total, last = embedding[-1]
        n = int(last.split("/")[1].split()[0])
        assert last == f"embedding {n}/{n} chunks" and n >= 160, embedding
        assert done == total, embedding[-1]
        assert data["embedded_chunks"] == n, data
        assert data["vector_search"] == "ready", data
        assert "chunk(s) embedded; vector search: ready" in tool_text(result)
        # Searchable by meaning right away.
        r, found, text = await call(client, "semantic_search", {"query": "book a courier pickup for a parcel", "n_results": 3})
        assert found["mode"] == "hybrid" and found["vector_search"] == "ready", found
        assert any(h["path"].startswith("app/shipping_") for h in found["results"]), found

        # Without a token the answer comes at once and embedding runs in the background.
        (mini_repo / "app" / "shipping_0.py").write_text("def recall_parcel(parcel):\n    return None\n")
        r, data, text = await call(client, "sync_index", {})
        assert "embedded_chunks" not in data, data
        assert data["modified"] == 1, data


PRODUCT_FORM = "app/Filament/Clusters/Catalog/Resources/Products/Schemas/ProductForm.php"
PRODUCT_RESOURCE = "app/Filament/Clusters/Catalog/Resources/Products/ProductResource.php"
CREATE_PRODUCTS = "database/migrations/2025_01_10_100100_create_products_table.php"


def linked(entry: dict) -> set[tuple[str, str]]:
    return {(f["path"], f["kind"]) for f in entry.get("linked_files", [])}


async def test_results_carry_linked_files(code_intel_bin, tmp_path):
    """"Add a stock field to the product form": definitions and search
    results name the files tied to them (model, migrations, form class), in
    the structured result (checked against the output schema by the client)
    and in the text."""
    repo = copy_fixture("laravel-app", tmp_path)
    async with client_for(code_intel_bin, repo, "legacy") as client:
        await wait_indexed(client)
        r, data, text = await call(client, "find_definitions", {"symbol": "ProductForm"})
        assert not r.is_error, text
        form = next(d for d in data["definitions"] if d["path"] == PRODUCT_FORM and d["kind"] == "class")
        assert {("app/Models/Product.php", "model"), (CREATE_PRODUCTS, "table"), (PRODUCT_RESOURCE, "filament")} <= linked(form), form
        assert all(f["direction"] in ("in", "out") and f["via"] for f in form["linked_files"]), form
        assert f"    -> {CREATE_PRODUCTS} (table table:products)" in text, text

        r, data, text = await call(client, "find_definitions", {"symbol": "ProductResource", "kinds": ["filament_resource"]})
        resource = data["definitions"][0]
        assert resource["path"] == PRODUCT_RESOURCE, data
        assert 0 < len(resource["linked_files"]) <= 8, resource
        assert resource["linked_files"][0]["path"] == "app/Models/Product.php", resource
        assert (PRODUCT_FORM, "filament") in linked(resource), resource

        # Whatever ranking is available (hybrid with a model, keywords without),
        # the answer reaches both the form class and a products migration.
        if os.environ.get("CODE_INTEL_TEST_MODEL_DIR"):
            await wait_vectors_ready(client)
        r, data, text = await call(client, "semantic_search", {"query": "add a stock field to the product form", "n_results": 5})
        assert not r.is_error, text
        reached = {h["path"] for h in data["results"]} | {p for h in data["results"] for p, _ in linked(h)}
        assert PRODUCT_FORM in reached, data
        assert any(p.startswith("database/migrations/") and "products" in p for p in reached), data
        assert any(h.get("linked_files") for h in data["results"]), data
        assert "    <- " in text or "    -> " in text, text

        # A tight budget cuts linked files before results, and says so.
        r, data, text = await call(client, "find_definitions", {"symbol": "Product", "match": "prefix", "max_chars": 1500})
        assert not r.is_error, text
        assert data["definitions"], data
        assert any("linked files" in n for n in data.get("notes", [])), data
