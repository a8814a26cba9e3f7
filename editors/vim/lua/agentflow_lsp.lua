-- flowc's language server for .flow buffers in Neovim (0.7 or newer), no plugin needed:
-- diagnostics with quick fixes, hover, definition, references, completion, rename, formatting,
-- symbols and the test code lenses all come from `flowc lsp`.
--
--   require("agentflow_lsp")   -- with editors/vim on 'runtimepath' (this file is lua/…)
--   vim.g.flowc_cmd = { "/path/to/.venv/bin/flowc", "lsp" }   -- when flowc is not on PATH
--
-- Its root is the nearest directory holding flow.toml (else .git, else the file's own).
local M = {}

local function root_of(file)
  local dir = vim.fn.fnamemodify(file, ":p:h")
  for _, marker in ipairs({ "flow.toml", ".git" }) do
    local found = vim.fn.findfile(marker, dir .. ";")
    if found == "" then
      found = vim.fn.finddir(marker, dir .. ";")
    end
    if found ~= "" then
      return vim.fn.fnamemodify(found, ":p:h")
    end
  end
  return dir
end

function M.config(bufnr)
  return {
    name = "flowc",
    cmd = vim.g.flowc_cmd or { "flowc", "lsp" },
    root_dir = root_of(vim.api.nvim_buf_get_name(bufnr)),
  }
end

-- start (or reuse) the client of this buffer's root and attach the buffer to it
function M.attach(bufnr)
  local config = M.config(bufnr)
  if vim.lsp.start then -- Neovim ≥ 0.8
    return vim.lsp.start(config, { bufnr = bufnr })
  end
  for _, client in pairs(vim.lsp.get_active_clients()) do -- Neovim 0.7
    if client.name == config.name and client.config.root_dir == config.root_dir then
      vim.lsp.buf_attach_client(bufnr, client.id)
      return client.id
    end
  end
  local id = vim.lsp.start_client(config)
  if id then
    vim.lsp.buf_attach_client(bufnr, id)
  end
  return id
end

vim.api.nvim_create_autocmd("FileType", {
  pattern = "flow",
  callback = function(args)
    M.attach(args.buf)
  end,
})

return M
