#!/usr/bin/env node
// The `ratchet` command: one bundled CommonJS module (see scripts/bundle.mjs), then main().
// bin/package.json makes this file CommonJS, so Node's ESM loader is never started.
// `ratchet hook user-prompt` (run on every prompt a user types) loads its own small bundle and
// always exits 0, whatever happens (docs/provenance.md, "The user's words").
// A ledger write flow first tries the workspace's daemon through a tiny client (docs/daemon.md);
// anything it does not serve, or cannot prove it did not run, falls back to main() in-process.
"use strict";
function inProcess(fallback) {
  require("../dist/bundle/ratchet.cjs")
    .main(process.argv, fallback)
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
} else if (
  process.env.RATCHET_NO_DAEMON !== "1" &&
  (process.argv[2] === "plan" ||
    process.argv[2] === "step" ||
    process.argv[2] === "metric" ||
    process.argv[2] === "reason" ||
    process.argv[2] === "headline" ||
    process.argv[2] === "note" ||
    process.argv[2] === "reference")
) {
  let client;
  try {
    client = require("../dist/bundle/client.cjs").clientMain(process.argv, `${__dirname}/../dist/bundle`);
  } catch {
    client = Promise.resolve({ fallback: {} });
  }
  client.then(
    (outcome) => {
      if (outcome.fallback) inProcess(outcome.fallback);
      else process.exitCode = outcome.status;
    },
    () => inProcess({}),
  );
} else {
  inProcess({});
}
