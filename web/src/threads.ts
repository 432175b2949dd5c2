/**
 * Threads: the list, and one thread with its messages, tool calls and their results, approvals
 * (approve / deny / always-approve a pending call), skills activated, checkpoint and budget; cancel
 * and inject a message. Every write goes through `/api/threads/...` with the page's token; a
 * refusal's message is shown in the status line.
 */
import { attempt, get, type Json } from "./api.js";
import { badge, h, mount, when } from "./dom.js";

type Status = (text: string) => void;

const enc = encodeURIComponent;

function parse(text: string | null | undefined): unknown {
  if (text === null || text === undefined) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function pretty(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v, null, 2);
}

/** Runs a write; shows the refusal's status and message, or `done` on success. */
async function write(
  status: Status,
  what: string,
  path: string,
  body: unknown,
  done: string,
): Promise<boolean> {
  return (await attempt(status, what, path, body, done)) !== undefined;
}

export async function threadsList(el: HTMLElement, selected?: string): Promise<void> {
  const page = await get("/api/threads?limit=200");
  const items: Json[] = page.threads ?? [];
  mount(
    el,
    h("h2", {}, "Threads"),
    items.length === 0 ? h("p", { class: "empty" }, "No threads yet.") : null,
    h(
      "ul",
      { class: "list" },
      items.map((t: Json) =>
        h(
          "li",
          { class: t.thread_id === selected ? "selected" : "" },
          h(
            "a",
            { href: `#/threads/${enc(t.thread_id)}`, "data-thread": t.thread_id },
            badge(t.state),
            " ",
            h("span", { class: "goal" }, String(t.goal).split("\n")[0]),
          ),
          h("div", { class: "meta" }, `${t.thread_id} · ${t.kind} · ${when(t.updated_at)}`),
        ),
      ),
    ),
  );
}

function budgetLine(t: Json): HTMLElement {
  const b = (parse(t.budget) ?? {}) as Json;
  const parts = [
    `steps ${t.step_count}${b.max_steps ? `/${b.max_steps}` : ""}`,
    `tokens ${t.input_tokens} in · ${t.output_tokens} out${b.max_tokens ? ` (max ${b.max_tokens})` : ""}`,
    `cost $${Number(t.cost_usd ?? 0).toFixed(4)}${b.max_cost_usd ? ` of $${b.max_cost_usd}` : ""}`,
  ];
  return h("div", { class: "meta", "data-budget": "" }, parts.join(" · "));
}

function message(m: Json): HTMLElement {
  const calls = (parse(m.tool_calls) ?? []) as Json[];
  return h(
    "div",
    {
      class: `msg msg-${m.role}${m.is_error ? " msg-error" : ""}`,
      "data-message": m.id,
      "data-role": m.role,
    },
    h("div", { class: "meta" }, `${m.role}${m.tool_name ? ` · ${m.tool_name}` : ""} · ${when(m.created_at)}`),
    m.content ? h("pre", { class: "msg-text" }, m.content) : null,
    calls.length
      ? h(
          "ul",
          { class: "plain" },
          calls.map((c: Json) =>
            h("li", { class: "meta" }, `calls ${c.name} ${JSON.stringify(c.args ?? {})}`),
          ),
        )
      : null,
  );
}

/** Messages being typed, by thread: a live re-render of the page keeps them (and the focus). */
const drafts = new Map<string, string>();

export async function threadView(el: HTMLElement, threadId: string, status: Status): Promise<void> {
  const v = await get(`/api/threads/${enc(threadId)}`);
  const t = v.thread;
  const base = `/api/threads/${enc(threadId)}`;
  const finished = ["completed", "done", "failed"].includes(String(t.state));
  const decide = (decision: "approve" | "deny", approvalId: string, always = false) =>
    void write(
      status,
      decision,
      `${base}/${decision}`,
      { approval_id: approvalId, ...(always ? { always: true } : {}) },
      `${decision === "approve" ? (always ? "always approved" : "approved") : "denied"} ${approvalId}`,
    );
  const typing = document.activeElement?.id === "inject-text";
  const injectBox = h("textarea", {
    id: "inject-text",
    rows: 2,
    placeholder: "a message for the thread",
    oninput: () => drafts.set(threadId, injectBox.value),
  });
  injectBox.value = drafts.get(threadId) ?? "";
  const inject = async () => {
    const text = injectBox.value.trim();
    if (!text) {
      status("inject: write a message first");
      return;
    }
    if (await write(status, "inject", `${base}/inject`, { message: text }, "message queued")) {
      injectBox.value = "";
      drafts.delete(threadId);
    }
  };
  const skills = (v.actions as Json[]).filter((a) => /skill/i.test(a.action));
  mount(
    el,
    h(
      "div",
      { class: "panel-head" },
      h("h2", { "data-thread-id": t.thread_id }, badge(t.state), " ", String(t.goal).split("\n")[0]),
      finished
        ? null
        : h(
            "button",
            {
              "data-action": "cancel-thread",
              onclick: () =>
                void write(
                  status,
                  "cancel",
                  `${base}/cancel`,
                  { reason: "cancelled from the dashboard" },
                  "cancelled",
                ),
            },
            "Cancel",
          ),
    ),
    h(
      "div",
      { class: "meta" },
      `${t.thread_id} · ${t.kind}${t.project ? ` · project ${t.project}` : ""}${t.model ? ` · ${t.model}` : ""} · orchestrator v${v.orchestrator?.version ?? "–"}`,
    ),
    budgetLine(t),
    t.reason ? h("div", { class: "error" }, t.reason) : null,
    v.pending.length
      ? h(
          "div",
          { class: "attention" },
          h("h3", {}, "Waiting for approval"),
          v.pending.map((p: Json) =>
            h(
              "div",
              { class: "approval", "data-approval": p.approval_id },
              h(
                "div",
                {},
                h("strong", {}, p.action),
                h("span", { class: "meta" }, ` · ${when(p.created_at)}`),
              ),
              h("pre", { class: "log" }, pretty(p.args)),
              h(
                "div",
                { class: "actions" },
                h(
                  "button",
                  { "data-action": "approve", onclick: () => decide("approve", p.approval_id) },
                  "Approve",
                ),
                h(
                  "button",
                  { "data-action": "always-approve", onclick: () => decide("approve", p.approval_id, true) },
                  "Always approve",
                ),
                h("button", { "data-action": "deny", onclick: () => decide("deny", p.approval_id) }, "Deny"),
              ),
            ),
          ),
        )
      : null,
    h("h3", {}, "Messages"),
    v.messages.length === 0 ? h("p", { class: "empty" }, "No messages yet.") : v.messages.map(message),
    finished
      ? null
      : h(
          "div",
          { class: "inject" },
          injectBox,
          h("button", { "data-action": "inject", onclick: () => void inject() }, "Send"),
        ),
    h("h3", {}, "Tool calls"),
    v.actions.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "table",
          {},
          h(
            "tr",
            {},
            ["call", "action", "decision", "status", "arguments", "result"].map((x) => h("th", {}, x)),
          ),
          v.actions.map((a: Json) =>
            h(
              "tr",
              { "data-call": a.call_id },
              h("td", { class: "meta wrap" }, a.call_id),
              h("td", {}, a.action),
              h("td", {}, a.decision),
              h("td", {}, badge(a.status)),
              h("td", { class: "wrap" }, h("pre", {}, pretty(parse(a.args)))),
              h(
                "td",
                { class: "wrap" },
                a.error
                  ? h("pre", { class: "error" }, a.error)
                  : h("pre", { "data-result": a.call_id }, pretty(parse(a.result)) ?? "–"),
              ),
            ),
          ),
        ),
    h("h3", {}, "Approvals"),
    v.approvals.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "ul",
          { class: "plain" },
          v.approvals.map((a: Json) =>
            h(
              "li",
              { "data-approval-row": a.approval_id },
              badge(a.status),
              ` ${a.action}${a.always ? " · always" : ""}${a.decided_by ? ` · by ${a.decided_by}` : ""}${a.reason ? ` · ${a.reason}` : ""} · ${when(a.decided_at ?? a.created_at)}`,
            ),
          ),
        ),
    h("h3", {}, "Skills activated"),
    skills.length === 0
      ? h("p", { class: "empty" }, "None.")
      : h(
          "ul",
          { class: "plain" },
          skills.map((a: Json) => h("li", {}, `${a.action} ${pretty(parse(a.args))}`)),
        ),
    h("h3", {}, "Checkpoint"),
    v.checkpoint
      ? h(
          "div",
          { class: "meta", "data-checkpoint": v.checkpoint.seq },
          `#${v.checkpoint.seq} at ${v.checkpoint.call} · ${v.checkpoint.answered ? "answered" : "waiting"} · ${v.checkpoint.bytes} bytes`,
        )
      : h("p", { class: "empty" }, "None."),
    v.outcome ? [h("h3", {}, "Outcome"), h("pre", { class: "log" }, pretty(v.outcome))] : null,
  );
  if (typing) injectBox.focus();
}
