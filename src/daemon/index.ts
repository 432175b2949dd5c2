/** The workspace daemon (docs/daemon.md): the resident server and its tiny client. */
export { type ClientOutcome, clientMain, type Fallback } from "./client.js";
export { buildIdOf, ownerOnly, trustedFolder } from "./files.js";
export { daemonMain, idleMsOf } from "./main.js";
export {
  DEFAULT_IDLE_MS,
  type Hello,
  IDLE_ENV,
  isServedCommand,
  LOCK_FILE,
  LOG_FILE,
  NO_DAEMON_ENV,
  PROTOCOL_VERSION,
  type Refusal,
  RefusalReason,
  type Reply,
  type Request,
  SERVED_COMMANDS,
  SOCKET_FILE,
} from "./protocol.js";
export { type DaemonOptions, runDaemon } from "./server.js";
