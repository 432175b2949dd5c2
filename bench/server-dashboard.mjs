// bench/server part (c): the dashboard in Chromium. See the header of bench/server.mjs.
//
// Two `ratchet serve` processes, one on a store of 1,000 plans (the baseline) and one on 100,000,
// seeded with direct SQL inserts through the real SQLite store in one transaction (2 steps and one
// event per plan). Chromium (playwright-core driving Debian's /usr/bin/chromium, as the browser
// tests launch it) loads pages from both alternately so machine noise hits both alike.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BIN, median, percentile, ROOT } from "./lib.mjs";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "bench-token-0123456789abcdef";
const T0 = Date.parse("2026-01-01T00:00:00Z");

/** `plans` plans (every 7th IN_PROGRESS), 2 steps each, one event per plan: direct SQL, one transaction. */
export async function seedPlans(ws, plans) {
  const { SqliteStore } = await import(join(ROOT, "dist", "store", "index.js"));
  const store = SqliteStore.open(ws.dbPath);
  const db = store.db;
  const insPlan = db.prepare(
    "INSERT INTO plans (plan_id, goal, kind, status, max_revisions, created_at, updated_at) VALUES (?, ?, 'plan', ?, 5, ?, ?)",
  );
  const insStep = db.prepare(
    "INSERT INTO steps (step_id, plan_id, parent_step_id, seq, role, depth, title, type, status, created_at, updated_at) VALUES (?, ?, NULL, ?, 'regular', 0, ?, 'CODE', ?, ?, ?)",
  );
  const insEvent = db.prepare(
    "INSERT INTO events (at, entity_kind, entity_id, plan_id, type, payload) VALUES (?, 'plan', ?, ?, 'plan.published', '{}')",
  );
  const t = performance.now();
  db.transaction(() => {
    for (let p = 0; p < plans; p++) {
      const at = new Date(T0 + p * 1000).toISOString();
      const id = `plan-${String(p).padStart(6, "0")}`;
      const status = p % 7 === 0 ? "IN_PROGRESS" : "COMPLETED";
      insPlan.run(id, `goal ${p}: release notes for build n${p}x`, status, at, at);
      for (let s = 1; s <= 2; s++)
        insStep.run(
          `${id}-S${s}`,
          id,
          s,
          `step ${s} of ${p}`,
          status === "COMPLETED" ? "COMPLETED" : "PENDING",
          at,
          at,
        );
      insEvent.run(at, id, id);
    }
  })();
  store.close();
  return performance.now() - t;
}

function serve(ws) {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0", "--token", TOKEN, "--quiet"], {
    cwd: ws.root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  const url = new Promise((resolve, reject) => {
    child.stdout.on("data", (c) => {
      out += c;
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)).url);
    });
    child.on("close", (code) => reject(new Error(`serve exited ${code}: ${err}`)));
  });
  return { child, url };
}

// The writer of the SSE-to-DOM figure: another process, committing `step start` through the ledger
// each time it reads a line (the step's index), and answering with the commit time (epoch ms).
const STEPPER = `
const { SqliteStore, BlobStore } = await import(${JSON.stringify(join(ROOT, "dist", "store", "index.js"))});
const { Ledger } = await import(${JSON.stringify(join(ROOT, "dist", "ledger", "index.js"))});
const [db, blobs, ...ids] = process.argv.slice(1);
const store = SqliteStore.open(db);
const ledger = new Ledger({ store, blobs: new BlobStore(blobs) });
let buf = "";
process.stdin.on("data", (c) => {
  buf += c;
  let nl;
  while ((nl = buf.indexOf("\\n")) >= 0) {
    const i = Number(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    ledger.start({ step_id: ids[i] });
    process.stdout.write(JSON.stringify({ at: performance.timeOrigin + performance.now() }) + "\\n");
  }
});
process.stdin.on("end", () => store.close());
`;

function stepper(ws, ids) {
  const child = spawn(process.execPath, [
    "--input-type=module",
    "-e",
    STEPPER,
    ws.dbPath,
    ws.blobsDir,
    ...ids,
  ]);
  let out = "";
  const waiting = [];
  child.stdout.on("data", (c) => {
    out += c;
    for (let nl = out.indexOf("\n"); nl >= 0; nl = out.indexOf("\n")) {
      const line = out.slice(0, nl);
      out = out.slice(nl + 1);
      waiting.shift()?.(JSON.parse(line).at);
    }
  });
  return {
    start: (i) =>
      new Promise((resolve) => {
        waiting.push(resolve);
        child.stdin.write(`${i}\n`);
      }),
    close: () => child.stdin.end(),
  };
}

async function rowsDrawn(page, n) {
  try {
    await page.waitForFunction((k) => document.querySelectorAll("#side-list [data-plan]").length >= k, n, {
      timeout: 120_000,
    });
  } catch (e) {
    const seen = await page.evaluate(
      () => `${location.href} | ${document.getElementById("side-list")?.textContent?.slice(0, 300)}`,
    );
    throw new Error(`${n} plan rows not drawn: ${seen}`, { cause: e });
  }
}

/** A fresh page → the plan list's 50 rows drawn (the app's files come from the browser cache after the first). */
async function firstRender(context, url) {
  const page = await context.newPage();
  const t = performance.now();
  await page.goto(`${url}/#/plans`);
  await rowsDrawn(page, 50);
  const ms = performance.now() - t;
  await page.close();
  return ms;
}

/** On a loaded dashboard: #/runs → #/plans, until the 50 rows are drawn. */
async function listPage(page) {
  await page.evaluate(() => {
    location.hash = "#/runs";
  });
  await page.waitForFunction(() => document.querySelectorAll("#side-list [data-plan]").length === 0);
  const t = performance.now();
  await page.evaluate(() => {
    location.hash = "#/plans";
  });
  await rowsDrawn(page, 50);
  return performance.now() - t;
}

/** Words typed in the search box (150 ms debounce in the page, then the server's search) → the one match drawn. */
async function search(page, plans, i) {
  await page.fill("#search", "");
  await rowsDrawn(page, 50);
  const p = (i * 7919) % plans;
  const want = `plan-${String(p).padStart(6, "0")}`;
  const t = performance.now();
  await page.fill("#search", `n${p}x`);
  await page.waitForFunction(
    (id) => {
      const rows = document.querySelectorAll("#side-list [data-plan]");
      return rows.length === 1 && rows[0].getAttribute("data-plan") === id;
    },
    want,
    { timeout: 120_000 },
  );
  const ms = performance.now() - t;
  await page.fill("#search", "");
  await rowsDrawn(page, 50);
  return ms;
}

export async function dashboard({ quick, workspace, frameP50 }) {
  if (!existsSync(CHROMIUM)) {
    console.warn(`bench/server dashboard: ${CHROMIUM} is missing, skipped`);
    return {};
  }
  const { chromium } = await import("playwright-core");
  const N = quick ? 5 : 15;
  const SIZES = [1000, 100_000];
  const stores = [];
  for (const plans of SIZES) {
    const { dir, ws } = workspace(`dash-${plans}`);
    const seedMs = await seedPlans(ws, plans);
    const s = serve(ws);
    stores.push({ plans, dir, ws, seedMs, server: s, url: await s.url });
  }
  const profile = mkdtempSync(join(tmpdir(), "ratchet-bench-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 900 },
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--no-first-run",
      "--disable-background-networking",
    ],
  });
  const out = {};
  try {
    // Warm-up: one of each per store (the first page load compiles the app).
    const pages = [];
    for (const s of stores) {
      await firstRender(context, s.url);
      const page = await context.newPage();
      await page.goto(`${s.url}/#/plans`);
      await rowsDrawn(page, 50);
      await listPage(page);
      pages.push(page);
    }
    const fr = stores.map(() => []);
    const lp = stores.map(() => []);
    const se = stores.map(() => []);
    for (let i = 0; i < N; i++)
      for (const [k, s] of stores.entries()) {
        fr[k].push(await firstRender(context, s.url));
        lp[k].push(await listPage(pages[k]));
        se[k].push(await search(pages[k], s.plans, i));
      }
    const [small, large] = stores;
    out["dashboard: seed 1,000 plans, direct SQL (ms)"] = small.seedMs;
    out["dashboard: seed 100,000 plans, direct SQL (ms)"] = large.seedMs;
    for (const [name, v] of [
      ["first render (fresh page → 50 plans drawn)", fr],
      ["plan list page (hash change → 50 plans drawn)", lp],
      ["search typed (150 ms debounce + server LIKE → 1 match drawn)", se],
    ]) {
      out[`dashboard ${name}: 1,000 plans p50 (ms)`] = median(v[0]);
      out[`dashboard ${name}: 100,000 plans p50 (ms)`] = median(v[1]);
      out[`dashboard ${name}: 100k ÷ 1k`] = median(v[1]) / median(v[0]);
    }

    // SSE-to-DOM: a plan of N+1 steps published through the ledger on the 1,000-plan store; its
    // view open; another process starts one step at a time.
    const { SqliteStore, BlobStore } = await import(join(ROOT, "dist", "store", "index.js"));
    const { Ledger } = await import(join(ROOT, "dist", "ledger", "index.js"));
    const st = SqliteStore.open(small.ws.dbPath);
    const ledger = new Ledger({ store: st, blobs: new BlobStore(small.ws.blobsDir) });
    const steps = Array.from({ length: N + 1 }, (_, i) => ({
      title: `live step ${i}`,
      type: "DOCUMENTATION",
    }));
    const pub = ledger.publish({ goal: "SSE to DOM", steps }, { cwd: small.dir });
    st.close();
    const page = pages[0];
    await page.goto(`${small.url}/#/plans/${pub.plan_id}`);
    await page.locator(`[data-step="${pub.step_ids[0]}"]`).first().waitFor({ timeout: 60_000 });
    await page.locator(".live.on").waitFor({ timeout: 60_000 });
    await page.evaluate(() => {
      globalThis.seenAt = {};
      const look = () => {
        for (const el of document.querySelectorAll('[data-step][data-status="IN_PROGRESS"]')) {
          const id = el.getAttribute("data-step");
          if (!(id in globalThis.seenAt)) globalThis.seenAt[id] = performance.timeOrigin + performance.now();
        }
      };
      new MutationObserver(look).observe(document.body, {
        subtree: true,
        childList: true,
        attributes: true,
        attributeFilter: ["data-status"],
      });
    });
    const w = stepper(small.ws, pub.step_ids);
    const lat = [];
    for (let i = 0; i <= N; i++) {
      const committed = await w.start(i);
      const id = pub.step_ids[i];
      await page.waitForFunction((sid) => sid in globalThis.seenAt, id, { timeout: 60_000 });
      const seen = await page.evaluate((sid) => globalThis.seenAt[sid], id);
      if (i > 0) lat.push(seen - committed); // the first one warms the path up
      await new Promise((r) => setTimeout(r, 300));
    }
    w.close();
    out["SSE-to-DOM step start → IN_PROGRESS drawn p50 (ms)"] = median(lat);
    out["SSE-to-DOM step start → IN_PROGRESS drawn max (ms)"] = percentile(lat, 100);
    out["SSE-to-DOM samples"] = lat.length;
    if (frameP50 !== undefined) {
      out["SSE frame latency paced p50, (a) (ms, baseline)"] = frameP50;
      out["SSE-to-DOM p50 ÷ SSE frame p50"] = median(lat) / frameP50;
    }
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
    for (const s of stores) {
      s.server.child.kill("SIGTERM");
      rmSync(s.dir, { recursive: true, force: true });
    }
  }
  return out;
}
