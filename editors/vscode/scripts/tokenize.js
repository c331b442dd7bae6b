// Tokenize .eff files with the real VS Code TextMate engine (vscode-textmate + Oniguruma) and print
// [file, line, column, text, innermost scope] as JSON.  Optional cross-check of tests/lsp/test_lsp_grammar.py:
//   cd editors/vscode && npm install --no-save vscode-textmate@9 vscode-oniguruma@2
//   node scripts/tokenize.js syntaxes/eff.tmLanguage.json ../../examples/*.eff > /tmp/tm.json
//   python tests/lsp/test_lsp_grammar.py /tmp/tm.json   # compares with the Python matcher
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");
const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
const onigLib = oniguruma.loadWASM(wasm).then(() => ({
  createOnigScanner: (p) => new oniguruma.OnigScanner(p),
  createOnigString: (s) => new oniguruma.OnigString(s),
}));
const registry = new vsctm.Registry({
  onigLib,
  loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(process.argv[2], "utf8"), process.argv[2]),
});
registry.loadGrammar("source.eff").then((grammar) => {
  const out = [];
  for (const file of process.argv.slice(3)) {
    const lines = fs.readFileSync(file, "utf8").split("\n");
    let stack = vsctm.INITIAL;
    lines.forEach((line, n) => {
      const r = grammar.tokenizeLine(line, stack);
      for (const t of r.tokens) out.push([path.basename(file), n + 1, t.startIndex + 1, line.slice(t.startIndex, t.endIndex), t.scopes[t.scopes.length - 1]]);
      stack = r.ruleStack;
    });
  }
  console.log(JSON.stringify(out));
});
