// node markdown.js MIL_GRAMMAR.json INJECTION.json FILE -> JSON on stdout: [[line, [[start, end, scopes], ...]], ...]
// FILE is tokenized as Markdown with the injection grammar applied, the way VS Code injects it
// into its Markdown grammar. The stand-in Markdown grammar has no rules of its own: what gets
// MIL scopes gets them from the injection alone.
'use strict';
const fs = require('fs');
const path = require('path');
const oniguruma = require('vscode-oniguruma');
const vsctm = require('vscode-textmate');

const MARKDOWN = { scopeName: 'text.html.markdown', patterns: [] };

async function main([milPath, injectionPath, file]) {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const injection = JSON.parse(fs.readFileSync(injectionPath, 'utf8'));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scope) => {
      if (scope === 'source.mil') return vsctm.parseRawGrammar(fs.readFileSync(milPath, 'utf8'), milPath);
      if (scope === injection.scopeName) return vsctm.parseRawGrammar(fs.readFileSync(injectionPath, 'utf8'), injectionPath);
      if (scope === MARKDOWN.scopeName) return vsctm.parseRawGrammar(JSON.stringify(MARKDOWN), 'markdown.json');
      return null;
    },
    getInjections: (scope) => (scope === MARKDOWN.scopeName ? [injection.scopeName] : undefined),
  });
  const grammar = await registry.loadGrammar(MARKDOWN.scopeName);
  let state = vsctm.INITIAL;
  const out = fs.readFileSync(file, 'utf8').split(/\r\n|\r|\n/).map((line) => {
    const result = grammar.tokenizeLine(line, state);
    state = result.ruleStack;
    return [line, result.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes])];
  });
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
