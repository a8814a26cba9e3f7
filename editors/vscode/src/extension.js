// Minimal VS Code client: starts `flowc lsp` over stdio for .flow files.
"use strict";
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration("agentflow");
  const command = config.get("flowcPath", "flowc");
  const serverOptions = {
    command,
    args: ["lsp"],
    transport: TransportKind.stdio,
  };
  const clientOptions = {
    documentSelector: [{ scheme: "file", language: "flow" }, { scheme: "untitled", language: "flow" }],
    initializationOptions: { debounce_ms: config.get("debounceMs", 10) },
  };
  client = new LanguageClient("agentflow", "agentflow (flowc lsp)", serverOptions, clientOptions);
  // the "run test" code lens of each `test` block: `flowc test FILE -k NAME` in a terminal
  context.subscriptions.push(
    vscode.commands.registerCommand("agentflow.runTest", (uri, name) => {
      const file = vscode.Uri.parse(uri).fsPath;
      const quote = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";
      const terminal = vscode.window.createTerminal("flowc test");
      terminal.show();
      terminal.sendText(`${command} test ${quote(file)} -k ${quote(name)}`);
    })
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
