/**
 * The dashboard test harness: a built `ratchet serve` in a temp workspace (with the hello workflow
 * copied in) and Debian's Chromium through playwright-core, with a fresh profile per file.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import {
  assertBuilt,
  makeWorkspace,
  ROOT,
  type RunningCli,
  startRatchet,
  type TestWorkspace,
} from "../helpers/cli.js";

export const CHROMIUM = "/usr/bin/chromium";
export const TOKEN = "dashboard-test-token-0123456789";

export interface Dash {
  ws: TestWorkspace;
  server: RunningCli;
  url: string;
  context: BrowserContext;
  page: Page;
  artifacts: string;
  shot(name: string): Promise<void>;
  /** A CLI flow with JSON on stdin; its marker. */
  flow(args: string[], input: unknown): Promise<{ plan_id: string; step_ids: string[] }>;
  /** A write through the HTTP API with the token, from Node (seeding, not the page under test). */
  // biome-ignore lint/suspicious/noExplicitAny: JSON replies are read field by field
  post(path: string, body: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

export interface DashOptions {
  /** Extra `ratchet serve` flags. */
  serveArgs?: string[];
  /** Environment of the server (a model, say). */
  env?: Record<string, string>;
  /** Runs on the workspace before the server starts (a config.json, say). */
  setup?: (ws: TestWorkspace) => void | Promise<void>;
}

export async function openDashboard(name: string, opts: DashOptions = {}): Promise<Dash> {
  assertBuilt();
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: run scripts/ensure-system-deps.sh (npm test does)`);
  const artifacts = join(ROOT, "test-artifacts", name);
  mkdirSync(artifacts, { recursive: true });
  const ws = await makeWorkspace(`ratchet-${name}-`);
  cpSync(join(ROOT, "examples", "workflows", "hello"), join(ws.dir, "hello"), { recursive: true });
  await opts.setup?.(ws);
  const server = startRatchet(
    [
      "serve",
      "--port",
      "0",
      "--token",
      TOKEN,
      "--quiet",
      "--runner-dir",
      join(ws.dir, "runner-out"),
      "--workflow",
      join(ws.dir, "hello"),
      ...(opts.serveArgs ?? []),
    ],
    { cwd: ws.dir, timeoutMs: 600_000, ...(opts.env ? { env: opts.env } : {}) },
  );
  const deadline = Date.now() + 30_000;
  while (!server.stdoutSoFar().includes("\n")) {
    if (Date.now() > deadline) throw new Error(`serve did not start: ${server.stderrSoFar()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const url = JSON.parse(server.stdoutSoFar().split("\n")[0]!).url as string;
  const profile = mkdtempSync(join(tmpdir(), "ratchet-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    ws,
    server,
    url,
    context,
    page,
    artifacts,
    shot: async (n) => {
      await page.screenshot({ path: join(artifacts, `${n}.png`), fullPage: false });
    },
    flow: async (args, input) => {
      const r = await ws.run([...args, "-"], { input: JSON.stringify(input) });
      if (r.status !== 0) throw new Error(`ratchet ${args.join(" ")}: ${r.stderr}${r.stdout}`);
      return r.marker as { plan_id: string; step_ids: string[] };
    },
    post: async (path, body) => {
      const r = await fetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      });
      return { status: r.status, body: await r.json().catch(() => null) };
    },
    close: async () => {
      await context.close();
      server.child.kill("SIGTERM");
      await server.done.catch(() => undefined);
      rmSync(profile, { recursive: true, force: true });
      ws.remove();
    },
  };
}
