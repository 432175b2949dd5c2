/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` binaries (installed by
 * scripts/ensure-system-deps.sh), a cluster initialised into a temp folder, a free port on
 * 127.0.0.1, its unix socket in the same folder, fsync on (durability is part of the store's
 * contract). The server refuses to run as root, so as root the cluster belongs to the unprivileged
 * `postgres` user and every server binary runs through `runuser -u postgres --`.
 *
 * Use one cluster per test file: `const pg = await startPgCluster()` in `beforeAll`,
 * `pg.createDatabase()` for a fresh database per test (or suite), `pg.stop()` in `afterAll`. A
 * process exit hook stops the server too, so a failing or interrupted file leaves nothing running.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

export interface PgCluster {
  /** The server's port on 127.0.0.1. */
  port: number;
  /** The temp folder (data directory, socket, log). */
  dir: string;
  /** Seconds initdb + start took (the harness's CI cost, reported by the tests). */
  startSeconds: number;
  /** `postgres://postgres@127.0.0.1:<port>/<db>`. */
  url(db: string): string;
  /** Creates a new empty database and returns its URL. */
  createDatabase(name?: string): string;
  /** Runs SQL through psql as the superuser (tests' own checks); returns the raw output rows. */
  psql(db: string, sql: string): string[][];
  /** Stops the server (fast shutdown) and removes the folder. Idempotent. */
  stop(): void;
}

/** The folder of the newest installed PostgreSQL's binaries, e.g. /usr/lib/postgresql/15/bin. */
export function pgBinDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "pg_ctl")))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] ? join(root, majors[0], "bin") : undefined;
}

/**
 * Whether the PostgreSQL tests run: always, unless `RATCHET_SKIP_PG=1`. A machine without the
 * server binaries fails them with a pointer to scripts/ensure-system-deps.sh (which `npm test`
 * runs first) rather than skipping them silently.
 */
export const pgAvailable = (): boolean => process.env.RATCHET_SKIP_PG !== "1";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

const isRoot = () => userInfo().uid === 0;

/** Runs a server binary as the cluster's owner. */
function asOwner(bin: string, args: readonly string[]): { cmd: string; args: string[] } {
  return isRoot()
    ? { cmd: "runuser", args: ["-u", "postgres", "--", bin, ...args] }
    : { cmd: bin, args: [...args] };
}

function run(bin: string, args: readonly string[], what: string): string {
  const c = asOwner(bin, args);
  const r = spawnSync(c.cmd, c.args, { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0)
    throw new Error(`${what} failed (status ${r.status}): ${r.stderr || r.stdout || r.error?.message}`);
  return r.stdout;
}

let dbCounter = 0;

/** Initialises and starts a cluster; see the module comment. */
export async function startPgCluster(): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error("PostgreSQL is not installed: run `bash scripts/ensure-system-deps.sh`");
  const t0 = performance.now();
  const dir = mkdtempSync(join(tmpdir(), "ratchet-pg-"));
  const data = join(dir, "data");
  if (isRoot()) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o700);
  // initdb's own fsync of the fresh files is skipped (the folder is thrown away); the server runs
  // with fsync on.
  run(
    join(bin, "initdb"),
    ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "--no-sync"],
    "initdb",
  );
  const port = await freePort();
  const options = [
    "-c listen_addresses=127.0.0.1",
    `-c port=${port}`,
    `-c unix_socket_directories=${dir}`,
    "-c fsync=on",
    "-c synchronous_commit=on",
    "-c max_connections=200",
  ].join(" ");
  run(
    join(bin, "pg_ctl"),
    ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "-t", "60", "start"],
    "pg_ctl start",
  );
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    process.removeListener("exit", stop);
    try {
      run(join(bin, "pg_ctl"), ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"], "pg_ctl stop");
    } catch {
      // already down; the folder goes anyway
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stop);
  const url = (db: string) => `postgres://postgres@127.0.0.1:${port}/${db}`;
  const psql = (db: string, sql: string): string[][] => {
    const out = run(
      join(bin, "psql"),
      [
        "-h",
        dir,
        "-p",
        String(port),
        "-U",
        "postgres",
        "-d",
        db,
        "-X",
        "-A",
        "-t",
        "-F",
        "\t",
        "-v",
        "ON_ERROR_STOP=1",
        "-c",
        sql,
      ],
      "psql",
    );
    return out
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => l.split("\t"));
  };
  return {
    port,
    dir,
    startSeconds: (performance.now() - t0) / 1000,
    url,
    createDatabase(name) {
      const db = name ?? `t${process.pid}_${++dbCounter}`;
      psql("postgres", `CREATE DATABASE ${db}`);
      return url(db);
    },
    psql,
    stop,
  };
}
