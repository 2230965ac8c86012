// Starts the MIL language server (settings miltext.server.command and .args, by default
// `miltext lsp`) for .mil files; colouring needs no server. Install the server with:
// pip install 'miltext[lsp]'. Bundled with esbuild into dist/extension.js (npm run bundle).
'use strict';
const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

async function start() {
  const config = vscode.workspace.getConfiguration('miltext.server');
  if (!config.get('enabled', true)) return;
  const command = config.get('command', 'miltext');
  const args = config.get('args', ['lsp']);
  client = new LanguageClient('miltext', 'MIL (miltext)', { command, args },
    { documentSelector: [{ language: 'mil' }] });
  try {
    await client.start();
  } catch (e) {
    client = undefined;
    vscode.window.showWarningMessage(
      `MIL: could not start \`${[command, ...args].join(' ')}\` (${e.message || e}); install it with ` +
      "pip install 'miltext[lsp]' or set miltext.server.command and miltext.server.args.");
  }
}

async function stop() {
  const running = client;
  client = undefined;
  if (running) await running.stop();
}

async function restart() {
  await stop();
  await start();
}

function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('miltext.restartServer', restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('miltext.server')) restart();
    }),
  );
  return start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
