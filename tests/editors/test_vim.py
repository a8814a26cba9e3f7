"""editors/vim in a headless Neovim from the distribution (scripts/system-packages.sh installs
it): `*.flow` is detected as filetype `flow`, the generated syntax colours keywords by their role
(and leaves a keyword used as a name alone), and the LSP snippet (`lua/agentflow_lsp.lua`)
starts `flowc lsp`, whose diagnostics and hover reach the buffer (docs/editors.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

VIM = REPO / "editors" / "vim"

PROGRAM = """\
flow demo
input { limit: int }

stage pick -> int {
  let n = parallel map [1, 2] as x limit 2 { x + input.limit }
  require n.count > 0 else fail "none"
  return cuont
}
"""

CHECK = r"""
local out = {}
out.filetype = vim.bo.filetype
out.syntax = vim.b.current_syntax
local function group(line, col)
  return vim.fn.synIDattr(vim.fn.synID(line, col, 1), "name")
end
out.parallel = group(5, 11)   -- `parallel`
out.map = group(5, 20)        -- `map`
out.limit_keyword = group(5, 36)
out.limit_member = group(5, 60)  -- `input.limit`: a name
out.require = group(6, 3)
out.fail = group(6, 29)
out.stage = group(4, 1)
vim.wait(60000, function() return #vim.diagnostic.get(0) > 0 end, 50)
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out.diagnostics, { line = d.lnum, code = d.code, message = d.message })
end
local params = { textDocument = { uri = vim.uri_from_bufnr(0) }, position = { line = 3, character = 7 } }
local replies = vim.lsp.buf_request_sync(0, "textDocument/hover", params, 30000) or {}
out.hover = ""
for _, reply in pairs(replies) do
  if reply.result and reply.result.contents then
    local c = reply.result.contents
    out.hover = type(c) == "table" and (c.value or vim.inspect(c)) or tostring(c)
  end
end
vim.fn.writefile({ vim.fn.json_encode(out) }, vim.env.RESULT)
vim.cmd("qa!")
"""


def test_headless_neovim_detects_colours_and_runs_flowc_lsp(tmp_path):
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("nvim is missing: run `bash scripts/system-packages.sh` as root (neovim)")
    flowc = str(Path(sys.executable).with_name("flowc"))
    program = tmp_path / "demo.flow"
    program.write_text(PROGRAM, encoding="utf-8")
    check = tmp_path / "check.lua"
    check.write_text(CHECK, encoding="utf-8")
    result = tmp_path / "result.json"
    done = subprocess.run(
        [
            nvim, "--headless", "-u", "NONE", "-i", "NONE", "-n",
            "--cmd", f"set runtimepath^={VIM}",
            "--cmd", "filetype plugin on",
            "--cmd", "syntax on",
            "--cmd", f"lua vim.g.flowc_cmd = {{ {json.dumps(flowc)}, 'lsp' }}",
            "--cmd", "lua require('agentflow_lsp')",
            "-c", f"luafile {check}",
            str(program),
        ],
        cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "RESULT": str(result)},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.exists(), done.stdout + done.stderr
    out = json.loads(result.read_text())
    assert out["filetype"] == "flow" and out["syntax"] == "flow"
    assert out["stage"] == "flowDeclaration"
    assert out["parallel"] == out["map"] == out["limit_keyword"] == "flowControl"
    assert out["require"] == out["fail"] == "flowControl"
    assert out["limit_member"] == ""  # a keyword after `.` is a name
    assert [(d["line"], d["code"]) for d in out["diagnostics"]] == [(6, "unknown-name")]
    assert "pick" in out["hover"] and "int" in out["hover"], out["hover"]
