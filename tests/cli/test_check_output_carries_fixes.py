"""`flowc check --format json|sarif` carry a diagnostic's one exact edit (``Diagnostic.fix``, the
quick fix an editor offers): JSON as ``fix`` (null without), SARIF 2.1.0 as the result's
``fixes`` (docs/reference/cli.md "flowc check")."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from agentflow.cli import main

AND_AND = "input { a: bool, b: bool }\nstage s -> bool {\n  return input.a && input.b\n}\n"
SEMICOLON = "input { a: int }\nstage s -> int {\n  let x = input.a;\n  return x\n}\n"
NO_FIX = "input { a: int }\nstage s -> int {\n  return input.b\n}\n"

#: SARIF 2.1.0's `fix` (§3.55) and what it holds, as the standard's schema has them
_REGION = {
    "type": "object",
    "properties": {
        "startLine": {"type": "integer", "minimum": 1},
        "startColumn": {"type": "integer", "minimum": 1},
        "endLine": {"type": "integer", "minimum": 1},
        "endColumn": {"type": "integer", "minimum": 1},
    },
}
_FIX = {
    "type": "object",
    "required": ["artifactChanges"],
    "properties": {
        "description": {
            "type": "object",
            "required": ["text"],
            "properties": {"text": {"type": "string"}},
        },
        "artifactChanges": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["artifactLocation", "replacements"],
                "properties": {
                    "artifactLocation": {
                        "type": "object",
                        "properties": {"uri": {"type": "string"}},
                    },
                    "replacements": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["deletedRegion"],
                            "properties": {
                                "deletedRegion": _REGION,
                                "insertedContent": {
                                    "type": "object",
                                    "properties": {"text": {"type": "string"}},
                                },
                            },
                        },
                    },
                },
            },
        },
    },
}
_SARIF_RESULTS = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message", "ruleId"],
                            "properties": {"fixes": {"type": "array", "items": _FIX}},
                        },
                    }
                },
            },
        }
    },
}


def _check(tmp_path: Path, src: str, fmt: str) -> object:
    f = tmp_path / "s.flow"
    f.write_text(src, encoding="utf-8")
    res = CliRunner().invoke(main, ["check", str(f), "--format", fmt])
    assert res.exit_code == 1
    return json.loads(res.stdout)


def test_json_carries_the_replacement_a_hint_states(tmp_path):
    (d,) = _check(tmp_path, AND_AND, "json")
    assert d["fix"] == {
        "title": "Replace `&&` with `and`",
        "text": "and",
        "file": str(tmp_path / "s.flow"),
        "line": 3,
        "column": 18,
        "end_line": 3,
        "end_column": 20,
    }


def test_json_carries_a_deletion_as_an_empty_text(tmp_path):
    (d,) = _check(tmp_path, SEMICOLON, "json")
    assert d["fix"]["text"] == ""
    assert (d["fix"]["line"], d["fix"]["column"], d["fix"]["end_column"]) == (3, 18, 19)


def test_json_fix_is_null_when_the_hint_is_not_one_exact_edit(tmp_path):
    (d,) = _check(tmp_path, NO_FIX, "json")
    assert d["code"] == "unknown-field" and d["hint"] is not None
    assert d["fix"] is None


def test_sarif_result_carries_the_fix_as_a_replacement_of_its_region(tmp_path):
    log = _check(tmp_path, AND_AND, "sarif")
    (result,) = log["runs"][0]["results"]
    assert result["fixes"] == [
        {
            "description": {"text": "Replace `&&` with `and`"},
            "artifactChanges": [
                {
                    "artifactLocation": {"uri": str(tmp_path / "s.flow")},
                    "replacements": [
                        {
                            "deletedRegion": {
                                "startLine": 3,
                                "startColumn": 18,
                                "endLine": 3,
                                "endColumn": 20,
                            },
                            "insertedContent": {"text": "and"},
                        }
                    ],
                }
            ],
        }
    ]
    jsonschema.validate(log, _SARIF_RESULTS)


def test_sarif_result_without_a_fix_has_no_fixes(tmp_path):
    (result,) = _check(tmp_path, NO_FIX, "sarif")["runs"][0]["results"]
    assert "fixes" not in result


def test_sarif_deletion_fix_is_valid_and_inserts_nothing(tmp_path):
    log = _check(tmp_path, SEMICOLON, "sarif")
    jsonschema.validate(log, _SARIF_RESULTS)
    (result,) = log["runs"][0]["results"]
    (replacement,) = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert replacement["insertedContent"] == {"text": ""}
    assert replacement["deletedRegion"]["endColumn"] == 19
