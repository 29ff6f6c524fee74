"""Conformance check: drive obsidian-kb through the official MCP Python SDK (`pip install mcp`).

Usage: conformance.py OBSIDIAN_KB_BINARY VAULT_DIR [MCP_INSPECTOR_CLI]
Initialises, lists tools (all five, object input schemas, output schemas), calls each tool (the
SDK validates structured content against the output schema), lists and reads resources, lists
resource templates, and checks that bad input is a clean error; then the same over Streamable
HTTP (`--http`), with the Origin and Host checks. With the MCP Inspector's CLI
(npm @modelcontextprotocol/inspector), does the same through it: a second client nobody here
wrote, whose ajv validator also checks the schemas. Exits non-zero on any failure and prints
`conformance: N passed, M failed`.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys
import traceback
import urllib.error
import urllib.request

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

import mcp.types as types

EXPECTED_TOOLS = {"search_notes", "list_notes", "read_note", "get_links", "list_tags"}


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.prefix = ""

    async def run(self, name, coro):
        name = self.prefix + name
        try:
            await coro
            self.passed += 1
            print(f"  ok    {name}")
        except Exception as e:  # noqa: BLE001 - report every failure, keep going
            self.failed += 1
            print(f"  FAIL  {name}: {e!r}")
            traceback.print_exc(limit=2)


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def main(binary, vault, inspector):
    checks = Checks()
    params = StdioServerParameters(command=binary, args=["--vault", vault], env={"RUST_LOG": "warn"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await session_checks(checks, s)

    if inspector:
        await inspector_checks(checks, inspector, [binary, "--vault", vault])

    await http_checks(checks, binary, vault, inspector)

    print(f"conformance: {checks.passed} passed, {checks.failed} failed")
    return 1 if checks.failed else 0


async def session_checks(checks, s):
    """Every check of one session: the same over stdio and over Streamable HTTP."""
    init = await s.initialize()
    print(f"server: {init.server_info.name} {init.server_info.version}, protocol {init.protocol_version}")

    async def tools_listed():
        tools = (await s.list_tools()).tools
        names = {t.name for t in tools}
        assert names == EXPECTED_TOOLS, names
        for t in tools:
            assert t.input_schema.get("type") == "object", (t.name, t.input_schema)
            assert t.output_schema and t.output_schema.get("type") == "object", t.name
            assert t.description, t.name
            assert t.annotations and t.annotations.read_only_hint is True, t.name

    await checks.run("tools/list: five tools, object schemas", tools_listed())

    async def search():
        r = await s.call_tool("search_notes", {"query": "how much water does the pump deliver per hour"})
        assert not r.is_error, text_of(r)
        hits = r.structured_content["hits"]
        assert hits and hits[0]["uri"] == "note://Projects/Alpha", hits
        # A hit is the note's best passage, under its heading path, with an Obsidian link.
        assert "litres" in hits[0]["passage"] and hits[0]["heading_path"] == ["Alpha"], hits[0]
        assert hits[0]["link"] == "obsidian://open?vault=vault&file=Projects%2FAlpha%23Alpha", hits[0]
        assert "note://Projects/Alpha" in text_of(r)
        r = await s.call_tool("search_notes", {"query": "東京タワー", "limit": 3})
        assert r.structured_content["hits"][0]["uri"] == "note://日本語ノート"

    await checks.run("tools/call search_notes", search())

    async def list_notes():
        seen, cursor = [], None
        while True:
            args = {"limit": 4} | ({"cursor": cursor} if cursor else {})
            r = await s.call_tool("list_notes", args)
            assert not r.is_error, text_of(r)
            seen += [n["uri"] for n in r.structured_content["notes"]]
            cursor = r.structured_content["next_cursor"]
            if not cursor:
                break
        assert len(seen) == len(set(seen)) and "note://Home" in seen, seen
        assert not any(".obsidian" in u or ".trash" in u for u in seen)

    await checks.run("tools/call list_notes (paged)", list_notes())

    async def read_note():
        r = await s.call_tool("read_note", {"uri": "note://Projects/Beta", "section": "Goals"})
        assert not r.is_error, text_of(r)
        sc = r.structured_content
        assert sc["uri"] == "note://Projects/Beta" and "irrigation" in sc["content"], sc
        assert sc["frontmatter"]["aliases"] == ["Second Project"]
        r = await s.call_tool("read_note", {"uri": "Second Project"})
        assert r.structured_content["uri"] == "note://Projects/Beta"

    await checks.run("tools/call read_note", read_note())

    async def get_links():
        r = await s.call_tool("get_links", {"uri": "Alpha"})
        assert not r.is_error, text_of(r)
        back = {b["uri"] for b in r.structured_content["backlinks"]}
        assert "note://Home" in back, back

    await checks.run("tools/call get_links", get_links())

    async def list_tags():
        r = await s.call_tool("list_tags", {"prefix": "project"})
        assert not r.is_error, text_of(r)
        tags = {t["tag"] for t in r.structured_content["tags"]}
        assert {"project/alpha", "project/beta"} <= tags, tags

    await checks.run("tools/call list_tags", list_tags())

    async def tool_errors():
        r = await s.call_tool("read_note", {"uri": "../../etc/passwd"})
        assert r.is_error, r
        r = await s.call_tool("read_note", {"uri": "Meeting"})
        assert r.is_error and "note://Work/Meeting" in text_of(r), text_of(r)

    await checks.run("tools/call errors are isError results", tool_errors())

    async def resources():
        uris, cursor = [], None
        while True:
            res = await s.list_resources(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
            uris += [r.uri for r in res.resources]
            cursor = res.next_cursor
            if not cursor:
                break
        assert "note://Home" in uris, uris
        for uri in uris:
            rr = await s.read_resource(uri)
            assert rr.contents and rr.contents[0].uri == uri, (uri, rr.contents[0].uri)

    await checks.run("resources/list + resources/read every note", resources())

    async def templates():
        t = await s.list_resource_templates()
        assert [x.uri_template for x in t.resource_templates] == ["note://{path}"]

    await checks.run("resources/templates/list", templates())

    async def resource_error():
        try:
            await s.read_resource("file:///etc/passwd")
        except Exception as e:  # the SDK raises McpError for JSON-RPC errors
            assert "root:" not in str(e)
            return
        raise AssertionError("reading file:///etc/passwd did not fail")

    await checks.run("resources/read outside the vault is an error", resource_error())

    async def still_alive():
        await s.send_ping()

    await checks.run("server still serving", still_alive())


def http_post(url, headers):
    """A bare `initialize` POST with `headers` added: the HTTP status it gets."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "conformance", "version": "1"}}}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as e:
        return e.code


async def http_checks(checks, binary, vault, inspector):
    """`obsidian-kb --http`: the same session checks through the SDK's Streamable HTTP client,
    the Origin and Host checks the MCP specification asks for, the Inspector CLI over HTTP,
    and a clean stop on Ctrl-C."""
    print("over Streamable HTTP (--http):")
    server = subprocess.Popen(
        [binary, "--vault", vault, "--http", "127.0.0.1:0"],
        stderr=subprocess.PIPE, text=True, env={**os.environ, "RUST_LOG": "warn"},
    )
    try:
        line = ""
        while "serving MCP" not in line:
            line = server.stderr.readline()
            assert line, "obsidian-kb --http ended before it said where it listens"
        url = line.split(" at ", 1)[1].split(";", 1)[0]
        checks.prefix = "http: "
        async with streamable_http_client(url) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await session_checks(checks, s)

        async def origins():
            assert http_post(url, {"Origin": "https://evil.example"}) == 403
            assert http_post(url, {"Origin": "http://localhost:6274"}) == 200

        await checks.run("a page of a foreign origin is refused, a local one is not", origins())

        async def rebinding():
            assert http_post(url, {"Host": "evil.example"}) == 403

        await checks.run("a foreign Host (DNS rebinding) is refused", rebinding())

        if inspector:
            await inspector_checks(checks, inspector, [url, "--transport", "http"])
    finally:
        checks.prefix = ""
        server.send_signal(signal.SIGINT)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            code = "no exit after Ctrl-C"

    async def stopped():
        assert code == 0, code

    await checks.run("http: Ctrl-C stops the server cleanly", stopped())


def inspect(inspector, target, *method):
    """One Inspector CLI run against `target` (a command, run fresh each time, or a URL and its
    transport): its JSON result and its stderr."""
    run = subprocess.run(
        [inspector, "--cli", *target, "--method", *method],
        capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 0, (method, run.returncode, run.stderr[-2000:])
    # The Inspector writes ajv's complaints about schemas to its output too: none are allowed.
    for stream in (run.stdout, run.stderr):
        assert "unknown format" not in stream and "schema is invalid" not in stream, stream[-2000:]
    start = run.stdout.index("{")
    return json.loads(run.stdout[start:]), run.stderr


async def inspector_checks(checks, inspector, target):
    print("through the MCP Inspector CLI:")

    async def tools():
        result, _ = inspect(inspector, target, "tools/list")
        names = {t["name"] for t in result["tools"]}
        assert names == EXPECTED_TOOLS, names

    await checks.run("inspector: tools/list, schemas accepted by ajv", tools())

    async def call():
        result, _ = inspect(inspector, target, "tools/call", "--tool-name", "search_notes",
                            "--tool-arg", "query=project goals", "limit=3")
        assert result.get("isError") is False, result
        hits = result["structuredContent"]["hits"]
        assert 0 < len(hits) <= 3 and all(h["uri"].startswith("note://") for h in hits), hits

    await checks.run("inspector: tools/call search_notes", call())

    async def bad_call():
        result, _ = inspect(inspector, target, "tools/call", "--tool-name", "read_note",
                            "--tool-arg", "uri=../../etc/passwd")
        assert result.get("isError") is True, result
        assert "root:" not in json.dumps(result), result

    await checks.run("inspector: a path outside the vault is an isError result", bad_call())

    async def resources():
        listed, _ = inspect(inspector, target, "resources/list")
        uri = listed["resources"][0]["uri"]
        read, _ = inspect(inspector, target, "resources/read", "--uri", uri)
        assert read["contents"][0]["uri"] == uri and read["contents"][0]["text"], read

    await checks.run("inspector: resources/list and resources/read", resources())


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: conformance.py OBSIDIAN_KB_BINARY VAULT_DIR [MCP_INSPECTOR_CLI]")
    inspector = sys.argv[3] if len(sys.argv) == 4 else None
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2], inspector)))
