/**
 * The Ratchet dashboard. Hash routes (`#/` and `#/attention`: what needs attention; `#/plans/<id>[/steps/<step>[/log]]`, `#/runs/<id>`,
 * `#/scripts/<wf>/<step>/<diff>`, `#/threads/<id>`, `#/runner/<task>`, `#/reasons/<plan>`, `#/why/<project>/<target>`)
 * choose the view; any other route shows a not-found view. `/events` (EventSource) re-renders the
 * view, and the open log, when something changes. It reads only the public HTTP API; the token is
 * used only for writes. Keys: `j`/`k` move through the side list, `/` focuses its search box.
 */
import { follow, get, type Json, setToken, token } from "./api.js";
import { attentionView } from "./attention.js";
import { h, mount } from "./dom.js";
import { firstPage, noFilters, onFilterChange } from "./filters.js";
import { plansList, planView, showLog } from "./plans.js";
import { threadsList, threadView } from "./threads.js";
import { reasonsView, whyView } from "./why.js";
import { runsList, runView, tasksList, taskView, workflowsList, workflowView } from "./work.js";

const $ = (id: string) => document.getElementById(id) as HTMLElement;

function route(): string[] {
  token(); // consumes a `&token=…` in the address before the route is read
  return location.hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((p) => decodeURIComponent(p));
}

function status(text: string): void {
  $("status").textContent = text;
}

let rendering: Promise<void> = Promise.resolve();
let again = false;
/** The route last drawn: a live refresh of the same route keeps the reader's scroll position. */
let drawn = "";

function notFound(side: HTMLElement, main: HTMLElement): void {
  mount(side, h("h2", {}, "Ratchet"), h("p", { class: "empty" }, "Choose a tab above."));
  mount(
    main,
    h(
      "div",
      { class: "not-found", "data-view": "not-found" },
      h("h2", {}, "Not found"),
      h("p", {}, `There is no page at ${location.hash || "#/"}.`),
      h("p", {}, h("a", { href: "#/" }, "Go to what needs attention")),
    ),
  );
}

async function render(): Promise<void> {
  const [tab = "attention", a, b, c, d] = route();
  for (const link of document.querySelectorAll<HTMLAnchorElement>("nav a"))
    link.classList.toggle("active", link.dataset.tab === tab);
  const side = $("side-list");
  if (tab !== "plans" && tab !== "runs" && tab !== "reasons") {
    noFilters(tab);
    delete side.dataset.serverSearch;
  }
  const main = $("main");
  const log = $("log");
  let logOf: string | undefined;
  try {
    if (tab === "attention" && a === undefined) {
      await attentionView(side, main, status);
    } else if (
      tab === "plans" &&
      (b === undefined || (b === "steps" && c && (d === undefined || d === "log")))
    ) {
      await plansList(side, a, searchText());
      if (a) {
        await planView(main, a, c, status);
        if (d === "log" && c) logOf = c;
      } else mount(main, h("p", { class: "empty" }, "Choose a plan."));
    } else if (tab === "runs" && b === undefined) {
      await runsList(side, a);
      if (a) await runView(main, a, status);
      else mount(main, h("p", { class: "empty" }, "Choose a run."));
    } else if (tab === "scripts" && d === undefined) {
      await workflowsList(side, a);
      if (a) await workflowView(main, a, b, c, status);
      else mount(main, h("p", { class: "empty" }, "Choose a workflow."));
    } else if (tab === "threads" && b === undefined) {
      await threadsList(side, a);
      if (a) await threadView(main, a, status);
      else mount(main, h("p", { class: "empty" }, "Choose a thread."));
    } else if (tab === "reasons" && a && b === undefined) {
      await plansList(side, a, searchText());
      await reasonsView(main, a);
    } else if (tab === "why" && a && b && c === undefined) {
      await whyView(main, a, b);
    } else if (tab === "runner" && b === undefined) {
      await tasksList(side, a);
      if (a) await taskView(main, a);
      else mount(main, h("p", { class: "empty" }, "Choose a task."));
    } else notFound(side, main);
  } catch (e) {
    mount(main, h("div", { class: "error" }, e instanceof Error ? e.message : String(e)));
  }
  applySearch();
  if (logOf)
    await showLog(log, logOf, `#/plans/${encodeURIComponent(a!)}/steps/${encodeURIComponent(logOf)}`);
  else log.hidden = true;
  if (drawn !== location.hash) {
    drawn = location.hash;
    // A detail chosen far down a long list is drawn where the reader is looking.
    const top = main.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight) main.scrollIntoView({ block: "start" });
    const sel = side.querySelector("li.selected");
    if (sel) sel.scrollIntoView({ block: "nearest" });
    const step = c ? main.querySelector(`[data-step="${CSS.escape(c)}"]`) : null;
    if (step) step.scrollIntoView({ block: "center" });
  }
}

/** Renders once at a time; a change during a render schedules exactly one more. */
function refresh(): void {
  if (again) return;
  again = true;
  rendering = rendering.then(async () => {
    again = false;
    await render();
  });
}

let pending: ReturnType<typeof setTimeout> | undefined;
function onEvent(e: Json): void {
  $("last-event").textContent = `#${e.id} ${e.type}`;
  if (pending) return;
  pending = setTimeout(() => {
    pending = undefined;
    refresh();
  }, 50);
}

function searchText(): string {
  return ($("search") as HTMLInputElement).value;
}

/**
 * Hides the side list's items whose text does not contain the search box's words; a list the
 * server searches (plans: goal and step titles) is redrawn instead.
 */
function applySearch(): void {
  if ($("side-list").dataset.serverSearch) return;
  const words = ($("search") as HTMLInputElement).value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  for (const li of $("side-list").querySelectorAll<HTMLElement>("ul.list > li")) {
    const text = (li.textContent ?? "").toLowerCase();
    li.hidden = !words.every((w) => text.includes(w));
  }
}

/** `j`/`k`: the next/previous visible item of the side list; `/`: the search box. */
function onKey(e: KeyboardEvent): void {
  const t = e.target as HTMLElement | null;
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  if (
    t &&
    (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable)
  ) {
    if (e.key === "Escape") t.blur();
    return;
  }
  if (e.key === "/") {
    e.preventDefault();
    $("search").focus();
    return;
  }
  if (e.key !== "j" && e.key !== "k") return;
  const items = [...$("side-list").querySelectorAll<HTMLElement>("ul.list > li")].filter((li) => !li.hidden);
  if (items.length === 0) return;
  const at = items.findIndex((li) => li.classList.contains("selected"));
  const next = at < 0 ? 0 : Math.max(0, Math.min(items.length - 1, at + (e.key === "j" ? 1 : -1)));
  const link = items[next]!.querySelector<HTMLAnchorElement>("a[href]");
  if (link) {
    e.preventDefault();
    location.hash = link.getAttribute("href")!;
  }
}

async function start(): Promise<void> {
  const tokenInput = $("token") as HTMLInputElement;
  tokenInput.value = token();
  tokenInput.addEventListener("change", () => setToken(tokenInput.value.trim()));
  let typing: ReturnType<typeof setTimeout> | undefined;
  $("search").addEventListener("input", () => {
    applySearch();
    if (!$("side-list").dataset.serverSearch) return;
    clearTimeout(typing);
    typing = setTimeout(() => {
      firstPage("plans");
      refresh();
    }, 150);
  });
  onFilterChange(refresh);
  document.addEventListener("keydown", onKey);
  window.addEventListener("hashchange", () => {
    status("");
    refresh();
  });
  const health = await get("/api/health");
  refresh();
  follow(health.last_event_id, onEvent, (live) => {
    const el = $("live");
    el.textContent = live ? "live" : "reconnecting…";
    el.className = live ? "live on" : "live off";
  });
}

void start();
