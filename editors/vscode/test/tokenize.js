// node tokenize.js GRAMMAR.json FILE... -> JSON on stdout: {FILE: [[line, [[start, end, scopes], ...]], ...]}
// Lines are split and tokenized one after another with the state carried over, as VS Code does.
'use strict';
const fs = require('fs');
const path = require('path');
const oniguruma = require('vscode-oniguruma');
const vsctm = require('vscode-textmate');

async function main([grammarPath, ...files]) {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve('vscode-oniguruma')), 'onig.wasm'));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarPath, 'utf8'), grammarPath),
  });
  const grammar = await registry.loadGrammar('source.mil');
  const out = {};
  for (const file of files) {
    let state = vsctm.INITIAL;
    out[file] = fs.readFileSync(file, 'utf8').split(/\r\n|\r|\n/).map((line) => {
      const result = grammar.tokenizeLine(line, state);
      if (result.stoppedEarly) throw new Error(`${file}: tokenizing stopped early on: ${line.slice(0, 80)}`);
      state = result.ruleStack;
      return [line, result.tokens.map((t) => [t.startIndex, Math.min(t.endIndex, line.length), t.scopes])];
    });
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
