/** The dashboard's only door to Ratchet: the public HTTP API of `ratchet serve`. */

// biome-ignore lint/suspicious/noExplicitAny: JSON from the API is read field by field
export type Json = any;

const TOKEN_KEY = "ratchet.token";

/** The bearer token: from `#token=…` once (then removed from the address bar), else the session. */
export function token(): string {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m?.[1]) {
    sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
    const rest = location.hash.replace(/(^#|&)token=[^&]+/, (_m, lead: string) => (lead === "#" ? "#" : ""));
    history.replaceState(null, "", location.pathname + rest);
  }
  return sessionStorage.getItem(TOKEN_KEY) ?? "";
}

export function setToken(t: string): void {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: Json,
  ) {
    super(body?.error?.message ?? `HTTP ${status}`);
  }
}

export async function get(path: string): Promise<Json> {
  const r = await fetch(path, { headers: { accept: "application/json" } });
  const body = await r.json().catch(() => null);
  if (!r.ok) throw new ApiError(r.status, body);
  return body;
}

export async function getText(path: string): Promise<string> {
  const r = await fetch(path);
  if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null));
  return r.text();
}

export async function post(path: string, body: unknown): Promise<Json> {
  const r = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token()}` },
    body: JSON.stringify(body),
  });
  const reply = await r.json().catch(() => null);
  if (!r.ok) throw new ApiError(r.status, reply);
  return reply;
}

/** Follows `/events` from `since`; the browser resumes with Last-Event-ID after a drop. */
export function follow(
  since: number,
  onEvent: (e: Json) => void,
  onState: (live: boolean) => void,
): EventSource {
  const es = new EventSource(`/events?since=${since}`);
  es.onopen = () => onState(true);
  es.onerror = () => onState(false);
  es.onmessage = (m) => onEvent(JSON.parse(m.data));
  return es;
}

/**
 * Runs a write and reports it through `status`: `done` on success, else the refusal's HTTP status
 * and message (`<what> refused (409): …`). Returns the reply, or undefined when refused.
 */
export async function attempt(
  status: (text: string) => void,
  what: string,
  path: string,
  body: unknown,
  done: string | ((reply: Json) => string),
): Promise<Json | undefined> {
  try {
    const reply = await post(path, body);
    status(typeof done === "string" ? done : done(reply));
    return reply ?? {};
  } catch (e) {
    status(
      e instanceof ApiError ? `${what} refused (${e.status}): ${e.message}` : `${what} failed: ${String(e)}`,
    );
    return undefined;
  }
}

const RUN_VARS_KEY = "ratchet.run-vars.";

/**
 * The variables a run was started with from this dashboard (the run tables do not record them),
 * kept for the session so "Re-run" can send them again.
 */
export function rememberRunVars(runId: string, vars: Record<string, string>): void {
  if (Object.keys(vars).length) sessionStorage.setItem(RUN_VARS_KEY + runId, JSON.stringify(vars));
}

export function runVars(runId: string): Record<string, string> | undefined {
  const v = sessionStorage.getItem(RUN_VARS_KEY + runId);
  return v ? (JSON.parse(v) as Record<string, string>) : undefined;
}
