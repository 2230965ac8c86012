// Starts `miltext lsp` (setting miltext.server.command) for .mil files; colouring needs no
// server. Install the server with: pip install 'miltext[lsp]'.
'use strict';
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate() {
  const config = vscode.workspace.getConfiguration('miltext.server');
  if (!config.get('enabled', true)) return undefined;
  const command = config.get('command', 'miltext');
  client = new LanguageClient('miltext', 'MIL (miltext)', { command, args: ["lsp"] },
    { documentSelector: [{ language: 'mil' }] });
  return client.start().catch((e) => {
    vscode.window.showWarningMessage(
      `MIL: could not start \`${command} lsp\` (${e.message || e}); install it with pip install 'miltext[lsp]' ` +
      'or set miltext.server.command.');
  });
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
