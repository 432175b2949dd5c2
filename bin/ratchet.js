#!/usr/bin/env node
// The `ratchet` command: one bundled module (see scripts/bundle.mjs), then main().
import { main } from "../dist/bundle/ratchet.mjs";

process.exitCode = await main(process.argv);
