#!/usr/bin/env node
// The `ratchet` command: one bundled CommonJS module (see scripts/bundle.mjs), then main().
// bin/package.json makes this file CommonJS, so Node's ESM loader is never started.
// `ratchet hook user-prompt` (run on every prompt a user types) loads its own small bundle and
// always exits 0, whatever happens (docs/provenance.md, "The user's words").
"use strict";
if (process.argv[2] === "hook" && process.argv[3] === "user-prompt") {
  let hook;
  try {
    hook = require("../dist/bundle/hook.cjs").hookMain(process.argv);
  } catch {
    hook = Promise.resolve(0);
  }
  hook.then(
    () => {
      process.exitCode = 0;
    },
    () => {
      process.exitCode = 0;
    },
  );
} else {
  require("../dist/bundle/ratchet.cjs")
    .main(process.argv)
    .then(
      (code) => {
        process.exitCode = code;
      },
      (err) => {
        process.stderr.write(`ratchet: internal error: ${err?.stack ?? err}\n`);
        process.exitCode = 1;
      },
    );
}
