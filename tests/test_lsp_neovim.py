"""A real client against `miltext lsp`: Neovim's built-in LSP client (Debian's neovim; `make
test` installs it), run headless. It opens a file with an error and gets its diagnostic, edits
the buffer (Neovim sends the change incrementally) and sees it cleared, hovers a name, and
formats a messy layout into the canonical text. The client is started by the README's own
lines (its `<!-- neovim -->` block), with this Python's `miltext` first on the PATH."""
import json
import os
import shutil
import subprocess
import sys

import pytest

import miltext
from support.docs import README, fenced_blocks
from support.texts import GOOD

# The README's lines that start the server in a buffer, as a user pastes them
(README_LINES,) = [b[2] for b in fenced_blocks(README) if b[3] == "neovim"]

SCRIPT = r"""
local out = {}
local function finish()
  local f = io.open(vim.env.MILTEXT_NVIM_OUT, "w")
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd("qall!")
end
local ok, err = pcall(function()
  vim.cmd("edit " .. vim.fn.fnameescape(vim.env.MILTEXT_NVIM_FILE))
  local buf = vim.api.nvim_get_current_buf()
  -- README --
  local client = vim.lsp.get_client_by_id(id)
  local function diagnostics()
    return vim.tbl_map(function(d) return { lnum = d.lnum, col = d.col, message = d.message } end,
                       vim.diagnostic.get(buf))
  end
  vim.wait(30000, function() return #vim.diagnostic.get(buf) > 0 end, 20)
  out.broken = diagnostics()
  -- mend the broken line: Neovim sends the edit as an incremental change
  local line = vim.api.nvim_buf_get_lines(buf, 3, 4, false)[1]
  vim.api.nvim_buf_set_lines(buf, 3, 4, false, { (line:gsub("%(x=%%x name", "(x=%%x, name")) })
  vim.wait(30000, function() return #vim.diagnostic.get(buf) == 0 end, 20)
  out.mended = diagnostics()
  local uri = vim.uri_from_bufnr(buf)
  local hover = client.request_sync("textDocument/hover",
    { textDocument = { uri = uri }, position = { line = 3, character = 31 } }, 10000, buf)
  out.hover = hover and hover.result and hover.result.contents.value or vim.NIL
  vim.lsp.buf.formatting_sync(nil, 10000)
  out.formatted = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end)
if not ok then out.error = tostring(err) end
finish()
"""

BROKEN_LINE = '    %c: (1, 2, fp32) = cond(pred=%p, name="c")'


def test_neovim_client_gets_diagnostics_hover_and_formatting(tmp_path):
    nvim = shutil.which("nvim")
    if nvim is None:
        pytest.fail("neovim is not installed (apt-get install neovim; make test does)", pytrace=False)
    messy = GOOD.replace(BROKEN_LINE, '    %c: (1, 2, fp32) = cond( pred = %p,\n      name="c" )')
    lines = messy.split("\n")
    # line 3 (0-based) gets a missing comma that the script puts back
    lines.insert(3, '    %z: (1, 2, fp32) = relu(x=%x name="z")')
    (tmp_path / "model.mil").write_text("\n".join(lines), encoding="utf-8")
    assert "vim.lsp.start_client" in README_LINES      # what the Neovim 0.7 `make test` installs has
    (tmp_path / "init.lua").write_text(SCRIPT.replace("  -- README --\n", README_LINES), encoding="utf-8")
    env = {**os.environ, "MILTEXT_NVIM_FILE": str(tmp_path / "model.mil"), "MILTEXT_NVIM_OUT": str(tmp_path / "out.json"),
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
           "XDG_STATE_HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path)}
    run = subprocess.run([nvim, "--headless", "--clean", "-n", "-c", f"luafile {tmp_path / 'init.lua'}"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert (tmp_path / "out.json").exists(), run.stdout + run.stderr
    out = json.loads((tmp_path / "out.json").read_text())
    assert "error" not in out, out["error"]
    assert [(d["lnum"], d["message"]) for d in out["broken"]] == [(3, "unexpected argument 'name': expected ',' or ')'")]
    assert out["mended"] == []
    assert "%x: (1, 2, fp32)" in out["hover"] and "input of function `main`" in out["hover"]
    expected = miltext.dumps(miltext.loads("\n".join(lines).replace("(x=%x name", "(x=%x, name")))
    assert out["formatted"] == expected.split("\n")[:-1]
    assert 'relu(x=%x, name="z")' in expected and "cond(pred=%p" in expected
