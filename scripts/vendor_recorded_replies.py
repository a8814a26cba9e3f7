#!/usr/bin/env python3
"""Vendor real provider replies from pydantic-ai's test cassettes (MIT licence) into
tests/runtime/recorded/<provider>/ as compact JSON (docs/models.md "Recorded replies").

Each cassette (a VCR YAML file of real HTTP exchanges with the provider) becomes one JSON file::

    {"source": "pydantic/pydantic-ai@<commit>:<path>", "licence": "MIT",
     "exchanges": [{"uri": …, "request": <JSON body>, "status": 200,
                    "response": <JSON body>} | {…, "sse": "<event stream text>"}]}

Only the exchanges with the provider's inference endpoint are kept (``/v1/responses``; Gemini's
``:generateContent`` / ``:streamGenerateContent``; Bedrock's ``/converse`` / ``/converse-stream``,
an AWS event stream kept as ``eventstream_b64``); headers are left out (they hold nothing the
tests read, and organisation ids). Nothing is written by hand.

    python scripts/vendor_recorded_replies.py /path/to/pydantic-ai-checkout
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "runtime" / "recorded"

#: provider → (cassette directory, endpoint pattern, size limit in bytes, always-kept files)
SOURCES = {
    "openai_responses": (
        "tests/models/cassettes/test_openai_responses",
        re.compile(r"/v1/responses$"),
        20_000,
        {
            "test_openai_responses_model_thinking_part.yaml",
            "test_openai_responses_thinking_with_tool_calls.yaml",
            "test_openai_responses_streaming_usage.yaml",
        },
    ),
    "gemini": (
        "tests/models/cassettes/test_google",
        re.compile(r"/models/[^/]+:(generateContent|streamGenerateContent)(\?alt=sse)?$"),
        20_000,
        set(),
    ),
    "bedrock": (
        "tests/models/cassettes/test_bedrock",
        re.compile(r"/model/[^/]+/(converse|converse-stream)$"),
        20_000,
        set(),
    ),
}

#: cassettes whose subject is a built-in tool, a file, an image or a stateful feature agentflow
#: does not use (server-side conversation state, background mode, compaction)
SKIP = re.compile(
    r"image|file_search|web_search|code_execution|mcp|compact|background|conversation_id|"
    r"previous_response_id|document|video|audio|pdf|youtube|url_context|count_tokens|"
    r"vertex|enterprise|google_maps|cached_content|upload|url_input|binary_content|web_fetch"
)


def body(part: dict) -> object:
    if "parsed_body" in part:
        return part["parsed_body"]
    raw = part.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:  # an AWS event stream: kept as base64
            return {"eventstream_b64": base64.b64encode(raw).decode("ascii")}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


#: more cassettes searched only for the rarer classes (an error status, cache usage): their
#: other exchanges are left out, and so is a request body over 4 kB (it carries an image)
HARVEST = {
    "openai_responses": ("tests/models/cassettes/test_openai_responses",),
    "gemini": (
        "tests/models/cassettes/test_google",
        "tests/models/cassettes/test_multimodal_tool_returns",
    ),
    "bedrock": ("tests/models/cassettes/test_bedrock",),
}


def _rare(provider: str, status: int, reply: object) -> bool:
    if status >= 400:
        return True
    text = reply if isinstance(reply, str) else json.dumps(reply)
    if provider == "gemini":
        return bool(re.search(r'"?cachedContentTokenCount"?: ?[1-9]', text))
    if provider == "bedrock":
        return bool(re.search(r'"cache(Read|Write)InputTokens": ?[1-9]', text))
    return bool(re.search(r'"cached_tokens": ?[1-9]', text))


def convert(checkout: Path, commit: str, provider: str) -> int:
    directory, endpoint, limit, keep = SOURCES[provider]
    files = []
    for folder in dict.fromkeys((directory, *HARVEST[provider])):
        files += subprocess.run(
            ["git", "-C", str(checkout), "ls-tree", "-r", "-l", commit, folder],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
    target = OUT / provider
    target.mkdir(parents=True, exist_ok=True)
    written = 0
    for line in files:
        meta, path = line.split("\t", 1)
        size_text = meta.split()[3]
        if not size_text.isdigit():  # not in the snapshot
            continue
        size = int(size_text)
        name = path.rsplit("/", 1)[-1]
        harvest = not path.startswith(directory + "/") or (
            name not in keep and (size == 0 or size > limit or SKIP.search(name))
        )
        if size == 0 or (harvest and provider == "gemini" and "google" not in name):
            continue
        text = subprocess.run(
            ["git", "-C", str(checkout), "show", f"{commit}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        data = yaml.safe_load(text) or {}
        exchanges = []
        for interaction in data.get("interactions") or []:
            request, response = interaction["request"], interaction["response"]
            uri = request.get("uri", "")
            if request.get("method") != "POST" or not endpoint.search(uri):
                continue
            status = response.get("status", {}).get("code", 200)
            reply = body(response)
            if harvest and (not _rare(provider, status, reply) or len(json.dumps(reply)) > 50_000):
                continue  # (a reply over 50 kB carries an image)
            sent = body(request)
            if harvest and len(json.dumps(sent)) > 4000:
                sent = {"omitted": "the request carries binary content"}
            entry: dict = {"uri": re.sub(r"key=[^&]+", "key=***", uri), "request": sent}
            entry["status"] = status
            if isinstance(reply, str) and ("data:" in reply[:200] or "event:" in reply[:200]):
                entry["sse"] = reply
            elif isinstance(reply, dict) and "eventstream_b64" in reply:
                entry["eventstream_b64"] = reply["eventstream_b64"]
            else:
                entry["response"] = reply
            exchanges.append(entry)
        if not exchanges:
            continue
        out = {
            "source": f"pydantic/pydantic-ai@{commit}:{path}",
            "licence": "MIT (Copyright (c) Pydantic Services Inc. 2024 to present)",
            "exchanges": exchanges,
        }
        stem = name.removesuffix(".yaml").replace("[", "_").replace("]", "").replace(" ", "_")
        stem = re.sub(r"[^A-Za-z0-9_.-]", "", stem)
        (target / f"{stem}.json").write_text(
            json.dumps(out, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n",
            encoding="utf-8",
        )
        written += 1
    return written


def main() -> int:
    checkout = Path(sys.argv[1])
    commit = subprocess.run(
        ["git", "-C", str(checkout), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for provider in sys.argv[2:] or list(SOURCES):
        print(provider, convert(checkout, commit, provider))
    return 0


if __name__ == "__main__":
    sys.exit(main())
