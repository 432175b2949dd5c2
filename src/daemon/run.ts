/** The daemon process itself: `node dist/bundle/daemon.cjs <workspace folder>` (see main.ts). */
import { daemonMain } from "./main.js";

// The build id is that of the file this process runs (process.argv[1], dist/bundle/daemon.cjs).
daemonMain(process.argv, process.argv[1] ?? "").then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`${new Date().toISOString()} daemon: internal error: ${(e as Error)?.stack ?? e}\n`);
    process.exit(1);
  },
);
