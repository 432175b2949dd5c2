/**
 * The worker half of the synchronous PostgreSQL bridge (see sync-client.ts). It runs in a worker
 * thread that owns one `pg` Client; it takes one request at a time from its message port, runs it,
 * posts the answer on the port and only then flips the shared flag and wakes the caller (so the
 * answer is always on the port when the caller wakes).
 *
 * It is kept as source text and started with `eval: true`: the same code then runs from the
 * TypeScript sources (vitest), from `dist/` and from the CommonJS bundle, which have no common
 * file layout for a worker entry. `pgPath` is the resolved entry of the `pg` package, so the worker
 * needs no module resolution of its own (a command's cwd may be any folder).
 */
export const BRIDGE_WORKER_SOURCE = `
"use strict";
const { workerData } = require("node:worker_threads");
const { port, flag, pgPath } = workerData;
const pg = require(pgPath);

// BIGINT (COUNT(*), ids, epoch milliseconds) and NUMERIC arrive as numbers, like better-sqlite3's.
const toNumber = (v) => (v === null ? null : Number(v));
pg.types.setTypeParser(20, toNumber);
pg.types.setTypeParser(1700, toNumber);

let client;
/** SQL text → prepared statement name: each distinct statement is parsed once per session. */
const names = new Map();
/**
 * Why the connection is gone for good (the server ended it, the socket closed): a pg Client never
 * reconnects, so every later request fails, and each answer says so ("lost") for the caller to
 * mark the session broken.
 */
let lost;
// SQLSTATE classes of a connection the server ended or refused: 08 connection exception,
// 57P01–57P03 administrator / crash shutdown, cannot connect now.
const FATAL_SQLSTATE = /^(08|57P0[1-3])/;

function reply(msg) {
  port.postMessage(msg);
  Atomics.store(flag, 0, 1);
  Atomics.notify(flag, 0);
}

function errorOf(e) {
  const o = e && typeof e === "object" ? e : { message: String(e) };
  return {
    message: String(o.message ?? o),
    code: typeof o.code === "string" ? o.code : undefined,
    detail: typeof o.detail === "string" ? o.detail : undefined,
    constraint: typeof o.constraint === "string" ? o.constraint : undefined,
    table: typeof o.table === "string" ? o.table : undefined,
    severity: typeof o.severity === "string" ? o.severity : undefined,
  };
}

async function handle(m) {
  switch (m.kind) {
    case "connect": {
      client = new pg.Client({
        connectionString: m.url,
        statement_timeout: m.statementTimeoutMs,
        idle_in_transaction_session_timeout: m.idleInTxTimeoutMs,
        connectionTimeoutMillis: m.connectTimeoutMs,
        application_name: m.applicationName,
      });
      // A connection lost between requests surfaces on the next query; do not crash the worker.
      client.on("error", (e) => {
        lost ??= String((e && e.message) || e);
      });
      client.on("end", () => {
        lost ??= "the connection to the server ended";
      });
      await client.connect();
      return { ok: true, rows: [], rowCount: 0 };
    }
    case "query": {
      let name = names.get(m.sql);
      if (name === undefined) {
        name = "ratchet_" + names.size;
        names.set(m.sql, name);
      }
      // A Uint8Array crossed the port from a Buffer: pg sends only Buffers as bytea.
      const values = m.params.map((v) => (v instanceof Uint8Array ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v));
      const r = await client.query({ name, text: m.sql, values });
      return { ok: true, rows: r.rows, rowCount: r.rowCount ?? 0 };
    }
    case "exec": {
      // The simple query protocol: several statements, no parameters, one round trip.
      await client.query(m.sql);
      return { ok: true, rows: [], rowCount: 0 };
    }
    case "close": {
      if (client) await client.end();
      return { ok: true, rows: [], rowCount: 0 };
    }
    default:
      throw new Error("unknown bridge request " + String(m.kind));
  }
}

port.on("message", (m) => {
  if (lost !== undefined && m.kind !== "close") {
    reply({ ok: false, error: { message: "the connection to the server is lost: " + lost }, lost });
    return;
  }
  handle(m).then(
    (answer) => {
      reply(answer);
      if (m.kind === "close") port.close();
    },
    (e) => {
      const error = errorOf(e);
      if (error.code && FATAL_SQLSTATE.test(error.code)) lost ??= error.message;
      // pg rejects a query on a closed socket without a SQLSTATE ("Connection terminated").
      if (client && (client._ending || client._queryable === false)) lost ??= error.message;
      reply({ ok: false, error, ...(lost !== undefined && m.kind !== "connect" ? { lost } : {}) });
    },
  );
});
`;
