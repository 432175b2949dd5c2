// Pages written per step transition (WAL frames counted, mapped to their b-tree through dbstat):
// node bench/tools/ledger-pages.mjs <dist>. The cost of a commit here is its page writes.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const dist = process.argv[2];
const { Ledger } = await import(join(dist, "ledger", "index.js"));
const { BlobStore, SqliteStore, initWorkspace } = await import(join(dist, "store", "index.js"));
const { workspace } = initWorkspace(mkdtempSync(join(tmpdir(), "lp-")));
const store = SqliteStore.open(workspace.dbPath, { create: true });
const ledger = new Ledger({ store, blobs: new BlobStore(workspace.blobsDir) });
const ids = [];
for (let i = 0; i < 50; i++) {
  const p = ledger.publish({
    goal: `bench plan ${i}`,
    steps: Array.from({ length: 20 }, (_, j) => ({ title: `s${j}`, type: "THINKING" })),
  });
  ids.push(...p.step_ids.slice(0, 20));
}
store.db.pragma("wal_checkpoint(TRUNCATE)");
const wal = workspace.dbPath + "-wal";
const pageSize = store.db.pragma("page_size", { simple: true });
function frames() {
  const b = readFileSync(wal);
  const size = pageSize;
  const out = [];
  for (let o = 32; o + 24 + size <= b.length; o += 24 + size) out.push(b.readUInt32BE(o));
  return out;
}
const which = (phase, n, f) => {
  const before = frames().length;
  for (const id of ids.slice(0, n)) f(id);
  const fr = frames().slice(before);
  const pages = new Map();
  for (const p of fr) {
    const r = store.db.prepare("SELECT name FROM dbstat WHERE pageno = ?").get(p);
    const k = r?.name ?? `page${p}`;
    pages.set(k, (pages.get(k) ?? 0) + 1);
  }
  console.log(phase, fr.length / n, Object.fromEntries([...pages].map(([k, v]) => [k, v / n])));
};
which("start", 200, (id) => ledger.start({ step_id: id }));
which("complete", 200, (id) => ledger.complete({ step_id: id, summary: "done" }));
