#!/usr/bin/env node
// The `ratchet` command: one bundled CommonJS module (see scripts/bundle.mjs), then main().
// bin/package.json makes this file CommonJS, so Node's ESM loader is never started.
"use strict";
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
