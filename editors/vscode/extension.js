// Starts `pipeweave lsp` for .weave files: diagnostics as you type, hover, completion and go to
// definition come from the language server; highlighting comes from syntaxes/weave.tmLanguage.json,
// the grammar the playground highlights with too.
"use strict";

const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("pipeweave").get("path", "pipeweave");
  const server = { command, args: ["lsp"], transport: TransportKind.stdio };
  client = new LanguageClient(
    "pipeweave",
    "pipeweave language server",
    { run: server, debug: server },
    { documentSelector: [{ language: "weave" }] },
  );
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
