-- Headless Neovim (0.10+) driving `ddpfix lsp` the way a user does:
-- open a script, wait for diagnostics, put the cursor on one, apply its quick-fix, write the file,
-- and wait for the diagnostics to refresh. Steps go to $DDPFIX_NVIM_LOG (headless stdout is unreliable).
-- Environment: DDPFIX_PYTHON, DDPFIX_TARGET, DDPFIX_CODE (the rule to fix), DDPFIX_NVIM_LOG.
local env = vim.env
local code = env.DDPFIX_CODE

local function log(msg)
  local f = io.open(env.DDPFIX_NVIM_LOG, 'a')
  f:write(msg .. '\n')
  f:close()
end

local function finish(status, msg)
  log((status == 0 and 'OK: ' or 'FAIL: ') .. msg)
  vim.cmd(status == 0 and 'qall!' or ('cquit ' .. status))
end

local ok, err = pcall(function()
  vim.cmd('edit ' .. vim.fn.fnameescape(env.DDPFIX_TARGET))
  local buf = vim.api.nvim_get_current_buf()
  local id = vim.lsp.start({
    name = 'ddpfix',
    cmd = { env.DDPFIX_PYTHON, '-m', 'ddpfix', 'lsp' },
    root_dir = vim.fs.dirname(env.DDPFIX_TARGET),
  })
  if not id then return finish(2, 'vim.lsp.start failed') end
  log('started client ' .. id)

  local function find(c)
    for _, d in ipairs(vim.diagnostic.get(buf)) do
      if d.code == c then return d end
    end
  end

  if not vim.wait(30000, function() return find(code) ~= nil end, 50) then
    return finish(3, 'no ' .. code .. ' diagnostic; got ' .. #vim.diagnostic.get(buf))
  end
  local client = vim.lsp.get_client_by_id(id)
  log('encoding ' .. client.offset_encoding .. ', diagnostics ' .. #vim.diagnostic.get(buf))
  local d = find(code)
  vim.api.nvim_win_set_cursor(0, { d.lnum + 1, d.col })  -- col: bytes, converted from the server's units
  log(string.format('cursor %d:%d on %s', d.lnum + 1, d.col, code))

  local before = vim.b.changedtick
  vim.lsp.buf.code_action({
    apply = true,
    context = { only = { 'quickfix' } },
    filter = function(a) return a.isPreferred and vim.startswith(a.title, code .. ':') end,
  })
  if not vim.wait(30000, function() return vim.b.changedtick ~= before end, 50) then
    return finish(4, 'the quick-fix did not change the buffer')
  end
  log('applied; changedtick ' .. before .. ' -> ' .. vim.b.changedtick)
  vim.cmd('write')
  log('written')

  -- the server re-analyses the edited text: the finding is gone, the others stay
  if not vim.wait(30000, function() return find(code) == nil and #vim.diagnostic.get(buf) > 0 end, 50) then
    return finish(5, code .. ' still reported after the fix')
  end
  log('diagnostics now ' .. #vim.diagnostic.get(buf))
  finish(0, 'done')
end)
if not ok then finish(9, tostring(err)) end
