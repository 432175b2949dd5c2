/**
 * `POST /api/workflows/{id}/trigger` in-process, on SQLite and on a real PostgreSQL server: the
 * bearer token, a good / bad / stale / replayed HMAC signature, an unknown workflow, one that does
 * not declare `webhook:`, bad variables (400 naming the field), read-only — and on every refusal
 * nothing recorded; an accepted trigger is recorded `trigger=webhook` and runs to the end.
 */
import { chmodSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { type PgCluster, pgAvailable, startPgCluster } from "../../test/harness/pg.js";
import {
  makePgServerFixture,
  makeServerFixture,
  type ServerFixture,
  TOKEN,
} from "../../test/helpers/server.js";
import type { ServerContext } from "./index.js";
import { signWebhook } from "./webhook-signature.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 120_000 });

let cluster: PgCluster | undefined;
beforeAll(async () => {
  if (pgAvailable()) cluster = await startPgCluster();
});
afterAll(() => cluster?.stop());

const SECRET = "whsec-test-0123456789abcdef";
const ENV_NAME = "RATCHET_TEST_HOOK_SECRET";

// biome-ignore lint/suspicious/noExplicitAny: replies are read loosely in tests
const json = async (r: Response) => (await r.json()) as Record<string, any>;

type Fx = ServerFixture<ServerContext>;
let fx: Fx | undefined;
afterEach(() => {
  fx?.dispose();
  fx = undefined;
  delete process.env[ENV_NAME];
});

/** Rewrites the hello workflow with a `webhook:` line (or none). */
function declare(f: Fx, webhook: string | undefined) {
  const file = join(f.helloDir, "workflow.yaml");
  const text = readFileSync(file, "utf8").replace(/^webhook:.*\n/m, "");
  writeFileSync(file, webhook === undefined ? text : text.replace(/^steps:/m, `webhook: ${webhook}\nsteps:`));
}

const stores = [
  { name: "SQLite", make: (): Fx => makeServerFixture() },
  {
    name: "PostgreSQL",
    make: (): Fx => {
      if (!cluster) throw new Error("no PostgreSQL cluster (RATCHET_SKIP_PG=1?)");
      return makePgServerFixture(cluster.createDatabase());
    },
  },
];

describe.each(stores)("webhook trigger on $name", ({ make }) => {
  const counts = (f: Fx) => ({
    runs: f.ctx.runs.listRuns({ limit: 100 }).length,
    events: f.ctx.store.lastEventId(),
  });

  function trigger(
    f: Fx,
    body: string,
    o: { token?: string | null; sig?: string; ts?: string | number; id?: string } = {},
  ) {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (o.sig !== undefined) headers["x-ratchet-signature"] = o.sig;
    if (o.ts !== undefined) headers["x-ratchet-timestamp"] = String(o.ts);
    return f.req("POST", `/api/workflows/${o.id ?? "hello"}/trigger`, {
      raw: body,
      token: o.token === undefined ? null : o.token,
      headers,
    });
  }

  const now = () => Math.floor(Date.now() / 1000);

  it("starts a run with the bearer token, recorded trigger=webhook, with the body's variables", async () => {
    fx = make();
    declare(fx, "true");
    const r = await trigger(fx, JSON.stringify({ vars: { names: "Hopper" }, group: "french" }), {
      token: TOKEN,
    });
    const body = await json(r);
    expect(r.status, JSON.stringify(body)).toBe(202);
    expect(body).toMatchObject({ ok: true, op: "webhook-trigger", trigger: "webhook", workflow_id: "hello" });
    await vi.waitFor(() => expect(fx?.ctx.runs.getRun(body.run_id)?.status).toBe("passed"), {
      timeout: 30_000,
      interval: 100,
    });
    const run = fx.ctx.runs.getRun(body.run_id);
    expect(run?.trigger).toBe("webhook");
    expect(run?.group_name).toBe("french");
    const listed = await json(await fx.req("GET", "/api/runs?trigger=webhook"));
    expect(listed.items.map((x: { run_id: string }) => x.run_id)).toEqual([body.run_id]);
  });

  it("accepts a good HMAC signature once; refuses it replayed, stale, forged or for another body", async () => {
    fx = make();
    declare(fx, `{secret_env: ${ENV_NAME}}`);
    process.env[ENV_NAME] = SECRET;
    const raw = JSON.stringify({ vars: { names: "Lovelace" } });
    const ts = now();
    const sig = signWebhook(SECRET, ts, raw);
    const before = counts(fx);

    // forged: the right shape, the wrong secret
    const forged = await trigger(fx, raw, { sig: signWebhook("not-the-secret", ts, raw), ts });
    expect(forged.status).toBe(401);
    expect((await json(forged)).error).toMatchObject({ code: "unauthorized", field: "signature" });
    // the signature of this body, sent with another body
    const other = await trigger(fx, JSON.stringify({ vars: { names: "Mallory" } }), { sig, ts });
    expect(other.status).toBe(401);
    // the timestamp moved into the window without re-signing
    expect((await trigger(fx, raw, { sig, ts: ts + 1 })).status).toBe(401);
    // stale: signed correctly, but six minutes old
    const old = ts - 360;
    const stale = await trigger(fx, raw, { sig: signWebhook(SECRET, old, raw), ts: old });
    expect(stale.status).toBe(401);
    expect((await json(stale)).error.message).toMatch(/5 minutes/);
    // no timestamp, a malformed one, a malformed signature
    expect((await trigger(fx, raw, { sig })).status).toBe(401);
    expect((await trigger(fx, raw, { sig, ts: "12.5" })).status).toBe(401);
    expect((await trigger(fx, raw, { sig: "sha256=zz", ts })).status).toBe(401);
    // a wrong bearer token is not rescued by a good signature
    expect((await trigger(fx, raw, { sig, ts, token: "wrong-token-0123456789" })).status).toBe(401);
    expect(counts(fx)).toEqual(before);

    const ok = await trigger(fx, raw, { sig, ts });
    const okBody = await json(ok);
    expect(ok.status, JSON.stringify(okBody)).toBe(202);
    const afterOne = counts(fx);
    expect(afterOne.runs).toBe(before.runs + 1);

    const replay = await trigger(fx, raw, { sig, ts });
    expect(replay.status).toBe(401);
    expect((await json(replay)).error.message).toMatch(/replay/);
    // the replay recorded nothing: the only new run is the accepted one
    expect(fx.ctx.runs.listRuns({ limit: 100 }).map((r) => r.run_id)).toEqual([okBody.run_id]);
    await vi.waitFor(() => expect(fx?.ctx.runs.getRun(okBody.run_id)?.status).toBe("passed"), {
      timeout: 30_000,
      interval: 100,
    });
  });

  it("reads the secret from .ratchet/secrets (mode 0600) when the environment has none", async () => {
    fx = make();
    declare(fx, `{secret_env: ${ENV_NAME}}`);
    const file = join(fx.workspace.dir, "secrets");
    writeFileSync(file, `${ENV_NAME}=${SECRET}\n`);
    chmodSync(file, 0o600);
    const raw = "{}";
    const ts = now();
    const r = await trigger(fx, raw, { sig: signWebhook(SECRET, ts, raw), ts });
    expect(r.status, JSON.stringify(await json(r.clone()))).toBe(202);
  });

  it("refuses signatures for a workflow that names no secret, and any trigger when the secret is unset", async () => {
    fx = make();
    declare(fx, "true");
    const raw = "{}";
    const ts = now();
    const r = await trigger(fx, raw, { sig: signWebhook(SECRET, ts, raw), ts });
    expect(r.status).toBe(401);
    expect((await json(r)).error.message).toMatch(/secret_env/);
    declare(fx, `{secret_env: ${ENV_NAME}}`);
    const unset = await trigger(fx, raw, { sig: signWebhook(SECRET, ts, raw), ts });
    expect(unset.status).toBe(401);
    expect((await json(unset)).error.message).toContain(ENV_NAME);
    expect(counts(fx).runs).toBe(0);
  });

  it("404s an unknown workflow and one without `webhook:`, even with the token", async () => {
    fx = make();
    declare(fx, undefined);
    const before = counts(fx);
    const none = await trigger(fx, "{}", { token: TOKEN });
    expect(none.status).toBe(404);
    expect((await json(none)).error).toMatchObject({ code: "not_found", field: "workflow_id" });
    declare(fx, "false");
    expect((await trigger(fx, "{}", { token: TOKEN })).status).toBe(404);
    const unknown = await trigger(fx, "{}", { token: TOKEN, id: "no-such-flow" });
    expect(unknown.status).toBe(404);
    expect((await trigger(fx, "{}", { token: TOKEN, id: "..%2F..%2Fetc" })).status).toBe(404);
    expect(counts(fx)).toEqual(before);
  });

  it("never self-heals: a webhook run of a broken learned script fails and leaves the script as it was", async () => {
    fx = make();
    declare(fx, "true");
    const script = join(fx.helloDir, "learnings", "greet", "main.py");
    const broken = "import sys\nsys.exit(3)\n";
    writeFileSync(script, broken);
    const r = await trigger(fx, "{}", { token: TOKEN });
    const body = await json(r);
    expect(r.status, JSON.stringify(body)).toBe(202);
    await vi.waitFor(() => expect(fx?.ctx.runs.getRun(body.run_id)?.status).toBe("failed"), {
      timeout: 30_000,
      interval: 100,
    });
    expect(fx.ctx.runs.getRun(body.run_id)?.trigger).toBe("webhook");
    const steps = fx.ctx.runs.stepRuns(body.run_id);
    expect(steps.find((x) => x.step_id === "greet")?.outcome).toBe("execution_and_validation_failed");
    expect(steps.every((x) => x.tokens === 0)).toBe(true);
    expect(readFileSync(script, "utf8")).toBe(broken);
  });

  it("400s bad bodies and variables naming the field, and records nothing", async () => {
    fx = make();
    declare(fx, "true");
    const before = counts(fx);
    const cases: [string, string][] = [
      [JSON.stringify({ vars: { nope: "x" } }), "vars.nope"],
      [JSON.stringify({ vars: { names: 3 } }), "vars.names"],
      [JSON.stringify({ vars: [] }), "vars"],
      [JSON.stringify({ group: "" }), "group"],
      [JSON.stringify({ workflow: "/etc" }), "workflow"],
      [JSON.stringify({ trigger: "manual" }), "trigger"],
      ["[1]", "body"],
      ["{not json", "body"],
      ['{"__proto__": {"x": 1}}', "__proto__"],
    ];
    for (const [raw, field] of cases) {
      const r = await trigger(fx, raw, { token: TOKEN });
      const b = await json(r);
      expect(r.status, raw).toBe(400);
      expect(String(b.error.field), raw).toContain(field);
    }
    // an undeclared group is refused by the run itself, before anything is recorded
    const g = await trigger(fx, JSON.stringify({ group: "klingon" }), { token: TOKEN });
    expect(g.status).toBe(404);
    expect(counts(fx)).toEqual(before);
  });
});

describe("webhook trigger in /openapi.json", () => {
  it("documents the route, its headers and the signature scheme it names", async () => {
    fx = makeServerFixture();
    const doc = await json(await fx.req("GET", "/openapi.json"));
    const op = doc.paths["/api/workflows/{workflowId}/trigger"].post;
    expect(op.security).toEqual([{ bearer: [] }, { webhookSignature: [] }]);
    expect(op.parameters.map((x: { name: string }) => x.name)).toEqual(
      expect.arrayContaining(["X-Ratchet-Signature", "X-Ratchet-Timestamp"]),
    );
    expect(Object.keys(doc.components.securitySchemes)).toEqual(["bearer", "webhookSignature"]);
  });
});

describe("webhook trigger, read-only server", () => {
  it("refuses with 403 whatever the credentials", async () => {
    fx = makeServerFixture({ readOnly: true });
    declare(fx, "true");
    const r = await fx.req("POST", "/api/workflows/hello/trigger", { raw: "{}" });
    expect(r.status).toBe(403);
    expect(fx.ctx.runs.listRuns({ limit: 10 })).toEqual([]);
  });
});
