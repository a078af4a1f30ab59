// Bundles src/main.js (CodeMirror 6 and the page's code, with the one TextMate grammar of
// editors/vscode) into dist/playground.js: one file, no source map, the same bytes for the same
// lockfile. `cargo xtask playground` runs it after `npm ci`; `OUT` names another output file
// (the check that the committed bundle is what this makes).
import { build } from "esbuild";

const out = process.env.OUT || "dist/playground.js";

await build({
  entryPoints: ["src/main.js"],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  charset: "utf8",
  legalComments: "eof",
  sourcemap: false,
  outfile: out,
  logLevel: "warning",
});
