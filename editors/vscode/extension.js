// Starts `effspec lsp` over stdio for .eff files.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function settings() {
  const c = vscode.workspace.getConfiguration("effspec");
  return {
    inlayHints: {
      enabled: c.get("inlayHints.enabled", true),
      status: c.get("inlayHints.status", true),
      unrecoverable: c.get("inlayHints.unrecoverable", false),
    },
    debounceMs: c.get("debounceMs", 30),
  };
}

function activate(context) {
  const command = vscode.workspace.getConfiguration("effspec").get("path", "effspec");
  const server = { command, args: ["lsp"] };
  client = new LanguageClient(
    "effspec",
    "effspec",
    { run: server, debug: server },
    {
      documentSelector: [{ scheme: "file", language: "eff" }, { scheme: "untitled", language: "eff" }],
      initializationOptions: settings(),
      synchronize: { configurationSection: "effspec" },
    }
  );
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("effspec") && client) {
        client.sendNotification("workspace/didChangeConfiguration", { settings: { effspec: settings() } });
      }
    })
  );
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
