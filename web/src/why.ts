/**
 * Provenance views: a plan's reason checklist (`#/reasons/<plan>`, from
 * `GET /api/plans/<id>/reasons`) and a node's why page (`#/why/<project>/<target>`, from
 * `GET /api/why`). Text only through textContent (dom.ts).
 */
import { get, type Json } from "./api.js";
import { h, mount } from "./dom.js";

const q = encodeURIComponent;
const date = (iso: string) => String(iso).replace("T", " ").slice(0, 16);

function shown(s: Json): string {
  const parts = ["plan", "edit", "close", "why"].filter((m) => s?.[m] > 0).map((m) => `${m} ${s[m]}`);
  return `shown ${parts.length ? parts.join(", ") : "0"}`;
}

/** One record: its line of facts, its words (span marked), its sources. */
function record(r: Json): HTMLElement {
  const facts = [
    `#${r.id}`,
    r.tier,
    String(r.evidence_level).replace("_", " "),
    date(r.occurred_at),
    shown(r.shown),
    ...(r.adopted_by?.length ? [`adopted by ${r.adopted_by.join(", ")}`] : []),
    ...(r.corrects?.length ? [`corrects #${r.corrects.join(", #")}`] : []),
    ...(r.rule_id ? [`rule ${r.rule_id}`] : []),
  ].join(" · ");
  return h(
    "li",
    { class: "record", "data-record": r.id, "data-tier": r.tier },
    h("div", { class: "meta" }, facts),
    h("div", { class: "words" }, r.text),
    r.quote && r.quote.marked !== r.text ? h("div", { class: "quote" }, r.quote.marked) : null,
    r.sources?.length
      ? h(
          "ul",
          { class: "plain sources" },
          r.sources.map((s: Json) =>
            h(
              "li",
              { "data-verifiability": s.verifiability },
              `source #${s.reference_id} · ${s.kind} · ${s.label} · ${s.verifiability}${s.uri ? ` ${s.uri}` : ""}`,
            ),
          ),
        )
      : null,
    r.cut ? h("div", { class: "meta" }, `… ${r.cut.chars} chars cut: ${r.cut.pointer}`) : null,
  );
}

function section(name: string, s: Json): HTMLElement[] {
  const parts: (HTMLElement | null)[] = [
    h("h3", { "data-section": name }, `${name} · ${s.total}`),
    s.records.length
      ? h("ul", { class: "plain" }, s.records.map(record))
      : h("p", { class: "empty" }, "None."),
    s.omitted
      ? h(
          "p",
          { class: "meta" },
          `… ${s.omitted} more not shown${s.pointers.length ? ` (${s.pointers.join(", ")})` : ""}`,
        )
      : null,
  ];
  return parts.filter((x): x is HTMLElement => x !== null);
}

export async function reasonsView(el: HTMLElement, planId: string): Promise<void> {
  const c = await get(`/api/plans/${q(planId)}/reasons`);
  mount(
    el,
    h("h2", {}, `Reasons · ${planId}`),
    h(
      "div",
      { class: "meta" },
      `${c.project ? `project ${c.project}` : "no project"} · slots ${c.slots.length} · answered ${c.answered} · open ${c.open}${c.has_graph ? "" : " · no state graph"}`,
    ),
    c.slots.length === 0
      ? h(
          "p",
          { class: "empty" },
          "No reason slots: the plan changed no node of its project (or has no state graph).",
        )
      : h(
          "ol",
          { class: "checklist" },
          c.slots.map((s: Json) =>
            h(
              "li",
              { "data-slot": s.node_key, "data-answered": String(s.answered) },
              h("a", { href: `#/why/${q(c.project)}/${q(s.node_key)}` }, s.qualified_name),
              ` (${s.node_type}, ${s.event_types.join("/")}) [${s.node_key}] `,
              h(
                "span",
                { class: s.answered ? "badge badge-completed" : "badge badge-pending" },
                s.answered ? "answered" : "open",
              ),
              s.reasons.length ? h("ul", { class: "plain" }, s.reasons.map(record)) : null,
            ),
          ),
        ),
    c.other.length
      ? [h("h3", {}, "Other rows of the plan"), h("ul", { class: "plain" }, c.other.map(record))]
      : null,
  );
}

export async function whyView(el: HTMLElement, project: string, target: string): Promise<void> {
  const r = await get(`/api/why?project=${q(project)}&target=${q(target)}`);
  if (!r.resolved) {
    mount(
      el,
      h("p", { class: "empty", "data-why": "none" }, `nothing on record for ${target} in project ${project}`),
    );
    return;
  }
  const s = r.summary;
  const read = r.read;
  mount(
    el,
    h("h2", { "data-why": r.resolved.node_key }, r.resolved.qualified_name),
    h(
      "div",
      { class: "meta" },
      `${r.resolved.node_key} · ${r.resolved.node_type} · ${r.resolved.file_path}:${r.resolved.line_start}-${r.resolved.line_end} · downstream ${s.downstream ?? "n/a"} · history ${s.history} · constraints ${s.constraints} (${s.active_constraints} active) · rejected ${s.rejected} · pending ${s.pending}`,
    ),
    h("h3", {}, `history · ${s.history}`),
    h(
      "ul",
      { class: "plain" },
      read.identity.events.map((e: Json) =>
        h("li", {}, `run ${e.run_id} · ${e.event_type}${e.detail ? ` · ${e.detail}` : ""}`),
      ),
    ),
    ...section("constraints", read.constraints),
    ...section("rejected", read.rejected),
    ...section("reasons", read.reasons),
    h("h3", {}, `prior claims · ${read.prior_claims.total}`),
    read.prior_claims.records.length
      ? h(
          "ul",
          { class: "plain" },
          read.prior_claims.records.map((c: Json) =>
            h("li", {}, `plan ${c.plan_id} · ${c.target}: ${c.claim} · outcome: none recorded`),
          ),
        )
      : h("p", { class: "empty" }, "None."),
  );
}
