// AgentOS memory inspector. Data comes from the JSON API of this server and is put in the page
// as text only (el() below never parses HTML), so nothing an agent stored can run as code.
"use strict";

const state = { agent: null, tab: "timeline", entryTypes: [], log: { types: new Set(), run: "", q: "", archive: "", shown: [], runs: {} },
  newest: 0, firstPage: true, events: null, notesCursor: null, compactionsCursor: null, openFacts: new Set(),
  openFolds: new Set(), fresh: new Set(), conversations: [], activityAt: 0, nowVersions: [] };
const $ = (id) => document.getElementById(id);

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value == null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child != null && child !== false) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function fill(node, ...children) { node.replaceChildren(); node.append(...children.flat(Infinity).filter((c) => c != null && c !== false)); }
const number = (n) => (n == null ? "–" : Number(n).toLocaleString("en-US"));
const plural = (n, word) => `${number(n)} ${word}${n === 1 ? "" : "s"}`;
const entriesText = (n) => `${number(n)} ${n === 1 ? "entry" : "entries"}`;
const when = (ts) => (ts ? ts.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");
// From ``first`` to ``last``: the second without its date when it is the same day.
const span = (first, last) => when(first) === when(last) ? when(first)
  : `${when(first)} → ${first.slice(0, 10) === last.slice(0, 10) ? when(last).slice(11) : when(last)}`;
function bytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KB", "MB", "GB"]; let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    for (const item of [].concat(value)) if (item != null && item !== "") query.append(key, item);
  }
  const response = await fetch(`/api/agents/${encodeURIComponent(state.agent)}${path}${query.size ? "?" + query : ""}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

// -- agents and navigation ---------------------------------------------------------------

async function start() {
  for (const button of document.querySelectorAll(".tabs button")) button.addEventListener("click", () => showTab(button.dataset.tab));
  wireTimeline(); wireRecall(); wireNowHistory();
  const hash = new URLSearchParams(location.hash.slice(1));
  const response = await fetch("/api/agents");
  const { agents, home } = await response.json();
  await listSpaces(hash.get("space"));
  if (hash.get("space")) return;
  if (!agents.length) {
    fill($("empty"), `No agents in ${home} yet. Run one (python -m core.engine --agent finn "...") and reload.`);
    $("empty").hidden = false;
    return;
  }
  fill($("agents"), agents.map((agent) => el("button", { class: `agent status-${agent.status || "none"}`, "data-agent": agent.name,
    title: agent.objective || "", onclick: () => openAgent(agent.name) }, el("span", { class: "dot" }), agent.name)));
  const wanted = agents.find((a) => a.name === hash.get("agent")) || agents[0];
  showTab(hash.get("tab") || "timeline", false);
  await openAgent(wanted.name);
}

// -- memory spaces: listed beside the agents, each with its members and timeline ----------------

async function listSpaces(wanted) {
  const { spaces } = await (await fetch("/api/spaces")).json();
  fill($("spaces"), spaces.map((space) => el("button", { class: "agent space", "data-space": space.name,
    title: `${space.memories} memories`, onclick: () => openSpace(space.name) }, space.name)));
  if (spaces.some((space) => space.name === wanted)) await openSpace(wanted);
}

async function openSpace(name) {
  const response = await fetch(`/api/spaces/${encodeURIComponent(name)}`);
  const space = await response.json();
  if (!response.ok) throw new Error(space.error || response.statusText);
  for (const button of document.querySelectorAll("#agents button, #spaces button")) {
    button.setAttribute("aria-current", String(button.dataset.space === name));
  }
  history.replaceState(null, "", `#space=${encodeURIComponent(name)}`);
  $("main").hidden = true;
  $("empty").hidden = true;
  $("space-view").hidden = false;
  fill($("space-title"), `Space ${space.space} `, el("small", {}, `${space.memories} memories`));
  fill($("space-members"), Object.entries(space.members).map(([agent, access]) =>
    el("span", { class: "badge" }, `${agent} (${access})`)));
  fill($("space-timeline"), space.entries.map((entry) => el("li", { "data-id": entry.id },
    el("span", { class: "muted" }, `#${entry.seq} ${when(entry.ts)} ${entry.author}: `), entry.content)));
}

function showTab(tab, remember = true) {
  if (!$(`tab-${tab}`)) tab = "timeline";
  state.tab = tab;
  for (const button of document.querySelectorAll(".tabs button")) button.setAttribute("aria-selected", String(button.dataset.tab === tab));
  for (const panel of document.querySelectorAll(".tab")) panel.hidden = panel.id !== `tab-${tab}`;
  if (remember) rememberPlace();
  if (tab === "now-history" && state.agent && !state.nowVersions.length) shown("now-diff-status", () => loadNowVersions());
  if (tab === "reflection" && state.agent) shown("reflection-status", () => Reflection.load());
}

function rememberPlace() { history.replaceState(null, "", `#agent=${encodeURIComponent(state.agent || "")}&tab=${state.tab}`); }

async function openAgent(name) {
  state.agent = name;
  $("space-view").hidden = true;
  for (const button of document.querySelectorAll("#agents button")) button.setAttribute("aria-current", String(button.dataset.agent === name));
  rememberPlace();
  Object.assign(state.log, { types: new Set(), run: "", q: "", archive: "", shown: [], runs: {} });
  state.newest = 0;
  state.openFacts.clear();
  state.openFolds.clear();
  state.nowVersions = [];
  $("log-search").value = "";
  const overview = await api("");
  $("main").hidden = false;
  state.entryTypes = overview.entry_types;  // core's one list of LOG.md entry types
  showState(overview);
  showRuns(overview.runs);
  showTimeline(overview.timeline, false);
  showConversations(overview.conversations);
  showNotes(overview.notes, false);
  showCompactions(overview.compactions, false);
  fill($("recall"));
  fill($("recall-status"));
  fill($("now-diff"));
  fill($("now-diff-status"));
  follow(name);
  await shown("activity-scope", loadActivity);
  if (state.tab === "now-history") await shown("now-diff-status", () => loadNowVersions());
  if (state.tab === "reflection") await shown("reflection-status", () => Reflection.load());
}

// Run ``work`` and show its failure in ``status`` (an element id) instead of letting it escape.
async function shown(status, work) {
  try { await work(); } catch (error) { fill($(status), el("span", { class: "warn" }, error.message)); }
}

// -- NOW, sizes, facts ---------------------------------------------------------------------

function showState(data) {
  showTypeChips(data.types || {});
  showNow(data.now);
  showSizes(data.sizes, data.counts);
  showFacts(data.facts, data.profiles);
  showAlerts(data.never_ended);
}

function showNow(now) {
  $("now-compare").hidden = !(now.version > 1);
  if (now.missing || now.error) { fill($("now"), el("p", { class: "muted" }, now.error || "no NOW.md yet")); return; }
  fill($("now-version"), `v${now.version}`);
  fill($("now"),
    el("p", {}, el("span", { class: `badge status-${now.status}` }, now.status), " ", el("span", { class: "muted" }, `updated ${when(now.updated_at)}`)),
    field("Objective", now.objective),
    field("Current step", now.current_step),
    now.plan.length ? el("div", {}, el("h3", {}, "Plan"), el("ul", { class: "plan" },
      now.plan.map((step) => el("li", { class: step.done ? "done" : "open" }, el("span", { class: "check" }, step.done ? "✓" : ""), step.text)))) : null,
    now.blockers.length ? el("div", {}, el("h3", {}, "Blockers"), el("ul", { class: "blockers" }, now.blockers.map((b) => el("li", {}, b)))) : null,
    field("Resume hint", now.resume_hint),
    el("p", { class: "muted small" }, `run ${now.run_id || "–"} · log seq ${number(now.log_seq)}`));
}

function field(label, value) { return value ? el("div", { class: "field" }, el("h3", {}, label), el("p", {}, value)) : null; }

function showSizes(sizes, counts) {
  const row = (tier, name, value, note) => el("tr", {}, el("th", {}, tier), el("td", {}, name), el("td", { class: "num" }, bytes(value)), el("td", { class: "muted" }, note || ""));
  fill($("sizes"), el("table", { class: "sizes" },
    row("hot", "NOW.md", sizes.hot["NOW.md"]),
    row("warm", "LOG.md", sizes.warm["LOG.md"]),
    row("", "archives", sizes.warm.archives, plural(sizes.warm.archive_files, "file")),
    row("cold", sizes.cold.database, sizes.cold["memory.db"], `${plural(counts.facts, "fact")}, ${plural(counts.messages, "message")}`),
    row("", "LanceDB", sizes.cold.lancedb, plural(counts.notes, "note")),
    sizes.cold.database === "memory.db" ? row("", "checkpoints", sizes.other["checkpoints.db"]) : null,  // else in the schema
    sizes.other.quarantine ? row("", "quarantine", sizes.other.quarantine, "torn LOG tails") : null),
    counts.unindexed_archives || counts.pending_cold_items
      ? el("p", { class: "warn small" }, `not indexed for recall yet: ${plural(counts.unindexed_archives, "archive")}, `
        + `${number(counts.pending_cold_items)} ${counts.pending_cold_items === 1 ? "memory" : "memories"}`) : null);
}

function showFacts(facts, profiles) {
  fill($("facts-count"), facts.length ? number(facts.length) : "");
  const groups = {};
  for (const fact of facts) (groups[fact.category] ||= []).push(fact);
  fill($("facts"), facts.length ? null : el("p", { class: "muted" }, "no facts"),
    Object.entries(groups).map(([category, items]) => el("div", { class: "facts" }, el("h3", {}, category),
      el("dl", {}, items.map((f) => [el("dt", { title: `updated ${when(f.updated_at)}` }, f.key),
        el("dd", { class: category === "secret" ? "secret" : null, "data-key": f.key }, el("span", { class: "value" }, f.value),
          f.versions ? factHistory(f) : null)])))),
    profiles.map((p) => el("div", { class: "profile" }, el("h3", {}, `profile of ${p.user_id || "the user"} (v${p.version})`),
      p.profile ? el("p", {}, p.profile) : null, p.soul ? el("p", { class: "muted" }, p.soul) : null,
      p.constraints.length ? el("ul", {}, p.constraints.map((c) => el("li", {}, c))) : null)));
}

// A fact's earlier values, fetched when its "N earlier values" button opens them; an open list stays open
// (and is fetched again) when a live update redraws the facts.
function factHistory(fact) {
  const list = el("ol", { class: "versions", hidden: true });
  const button = el("button", { class: "link muted small", "aria-expanded": "false",
    onclick: () => toggleFactHistory(fact.key, button, list, button.getAttribute("aria-expanded") !== "true") },
    plural(fact.versions, "earlier value"));
  if (state.openFacts.has(fact.key)) toggleFactHistory(fact.key, button, list, true);
  return [" ", button, list];
}

async function toggleFactHistory(key, button, list, open) {
  button.setAttribute("aria-expanded", String(open));
  list.hidden = !open;
  if (!open) { state.openFacts.delete(key); return; }
  state.openFacts.add(key);
  try {
    const { history, earlier } = await api(`/facts/${encodeURIComponent(key)}`);
    const older = history.slice(1);  // the first is the current value, shown beside the key
    fill(list, older.map((v) => el("li", { "data-id": v.id }, el("span", { class: "value" }, v.value), " ",
      el("span", { class: "muted small" }, `${v.category}, saved ${when(v.saved_at)}, replaced ${when(v.replaced_at)}`))),
      earlier > older.length ? el("li", { class: "muted small" }, `and ${plural(earlier - older.length, "older value")}`) : null);
  } catch (error) { fill(list, el("li", { class: "warn" }, error.message)); }
}

function showAlerts(neverEnded) {
  const stuck = neverEnded.filter((run) => !run.running);
  fill($("alerts"), stuck.length ? el("div", { class: "alert", role: "alert" },
    el("strong", {}, `${stuck.length} interrupted run${stuck.length > 1 ? "s" : ""}`), " (RUN_START without RUN_END): ",
    stuck.slice(-5).map((run) => el("button", { class: "link", onclick: () => filterRun(run.run_id) }, `${run.run_id} at seq ${run.start_seq}`))) : null);
}

// -- the timeline ----------------------------------------------------------------------------

function wireTimeline() {
  let timer = null;
  $("log-search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => { state.log.q = $("log-search").value.trim(); reloadLog(); }, 250); });
  $("log-form").addEventListener("submit", (event) => { event.preventDefault(); state.log.q = $("log-search").value.trim(); reloadLog(); });
  $("log-run").addEventListener("change", () => { state.log.run = $("log-run").value; reloadLog(); });
  $("log-clear").addEventListener("click", () => { clearFilters(); reloadLog(); });
  $("log-fold").addEventListener("change", renderLog);
  $("log-older").addEventListener("click", () => pageLog({ before: state.log.oldestShown }));
  $("log-newer").addEventListener("click", () => pageLog({ after: state.log.newestShown }));
}

// One chip per entry type of core's list (LOG.md holds no other). The chips are built once,
// so live updates refresh their counts in place and a pressed chip stays pressed.
function showTypeChips(counts) {
  const types = state.entryTypes;
  const chips = $("log-types");
  if (chips.dataset.types !== types.join(" ")) {
    chips.dataset.types = types.join(" ");
    fill(chips, types.map((type) => el("button", { type: "button", class: `chip type-${type}`, "data-type": type,
      onclick: () => { state.log.types.has(type) ? state.log.types.delete(type) : state.log.types.add(type); markChips(); reloadLog(); } },
    type, el("small", {}, ""))));
  }
  for (const chip of chips.querySelectorAll(".chip")) fill(chip.querySelector("small"), number(counts[chip.dataset.type] || 0));
  markChips();
}

function markChips() { for (const chip of document.querySelectorAll("#log-types .chip")) chip.setAttribute("aria-pressed", String(state.log.types.has(chip.dataset.type))); }

function showRuns(runs) {
  fill($("log-run"), el("option", { value: "" }, "all runs"), runs.map((run) => el("option", { value: run.run_id },
    `${run.run_id} · ${run.outcome} · ${number(run.entries)} entries${run.errors ? ` · ${run.errors} errors` : ""}`)));
}

function filterRun(runId) {
  if (![...$("log-run").options].some((o) => o.value === runId)) $("log-run").append(el("option", { value: runId }, runId));
  $("log-run").value = runId; state.log.run = runId; showTab("timeline"); reloadLog();
}

function filterArchive(archiveId) { state.log.archive = archiveId; showTab("timeline"); reloadLog(); }

function clearFilters() {
  Object.assign(state.log, { types: new Set(), run: "", q: "", archive: "" });
  $("log-search").value = ""; $("log-run").value = ""; markChips();
}

// The timeline around entry ``seq`` (filters cleared), with that entry marked and scrolled to: where a recall
// hit, a period of the activity chart or a NOW version came from.
async function showInTimeline(seq, newer = 3) {
  clearFilters();
  showTab("timeline");
  await pageLog({ before: seq + 1 + newer });
  const item = $("log").querySelector(`li.entry[data-seq="${seq}"]`);
  if (!item) return;
  const fold = item.closest("li.run-fold");
  if (fold && fold.querySelector(".fold-head").getAttribute("aria-expanded") !== "true") fold.querySelector(".fold-head").click();
  for (const old of $("log").querySelectorAll("li.entry.target")) old.classList.remove("target");
  item.classList.add("target");
  item.scrollIntoView({ block: "center" });
}

function logParams(page) {
  return { type: [...state.log.types], run: state.log.run, q: state.log.q, archive: state.log.archive, ...page };
}

function reloadLog() { return pageLog({}); }

let logRequests = 0;

async function pageLog(page) {
  const request = ++logRequests;  // only the newest request's answer is shown: an older one may arrive after it
  fill($("log-status"), "loading…");
  state.fresh.clear();
  try {
    const data = await api("/log", logParams(page));
    if (request === logRequests) showTimeline(data, true);
  } catch (error) {
    if (request === logRequests) fill($("log-status"), el("span", { class: "warn" }, error.message));
  }
}

function showTimeline(data, filtered) {
  const entries = data.entries;
  state.firstPage = !data.has_newer;
  state.log.newestShown = entries.length ? entries[0].seq : data.newest_seq;
  state.log.oldestShown = entries.length ? entries[entries.length - 1].seq : null;
  state.newest = Math.max(state.newest, data.newest_seq || 0);
  state.log.shown = entries;
  state.log.runs = data.runs || {};
  renderLog();
  $("log-older").disabled = !data.has_older;
  $("log-newer").disabled = !data.has_newer;
  const scope = [];
  if (data.archive) scope.push(el("span", { class: "badge" }, `archive ${data.archive.id}: entries ${data.archive.first}–${data.archive.last}`));
  if (state.log.q) scope.push(`matching “${state.log.q}”`);
  const total = data.total == null ? "" : ` of ${number(data.total)}`;
  fill($("log-status"), entries.length ? `${entries.length}${total} entries${filtered ? "" : ", newest first"} ` : "no entries match", scope);
}

function entryItem(entry) {
  const classes = [`entry`, `type-${entry.type}`];
  if (entry.never_ended) classes.push("never-ended");
  if (entry.failed) classes.push("failed");
  const text = entry.unreadable ? el("p", { class: "warn" }, "this entry's line cannot be read (damaged, or moved by a compaction)") : textBlock(entry.text, state.log.q);
  const meta = Object.keys(entry.meta || {}).filter((k) => k !== "run_id");
  return el("li", { class: classes.join(" "), "data-seq": entry.seq },
    el("div", { class: "head" },
      el("span", { class: "seq" }, `#${entry.seq}`), el("span", { class: `badge type-${entry.type}` }, entry.type),
      el("time", {}, when(entry.ts)),
      entry.run_id ? el("button", { class: "link run", onclick: () => filterRun(entry.run_id) }, `run ${entry.run_id}`) : null,
      entry.never_ended ? el("span", { class: "badge alarm" }, "never ended") : null,
      entry.running ? el("span", { class: "badge status-active" }, "running") : null,
      entry.failed ? el("span", { class: "badge alarm" }, entry.meta.outcome) : null,
      entry.archive ? el("button", { class: "link muted", onclick: () => filterArchive(entry.archive) }, `in ${entry.archive}`) : null,
      entry.summary_of ? el("button", { class: "link archive-link", onclick: () => filterArchive(entry.summary_of) }, `open archive ${entry.summary_of}`) : null,
      entry.type === "NOW_UPDATE" && !entry.unreadable ? el("button", { class: "link now-diff-link", onclick: () => compareNow(entry.seq) }, "what changed in NOW") : null),
    text,
    meta.length ? el("details", { class: "meta", open: marks(JSON.stringify(entry.meta), state.log.q) && !marks(entry.text, state.log.q) ? true : null },
      el("summary", {}, `metadata: ${meta.join(", ")}`), el("pre", {}, highlighted(JSON.stringify(entry.meta, null, 2), state.log.q))) : null);
}

// -- the timeline as rows: a run's consecutive entries fold into one row that opens -------------------------

const FOLDED = { STEP_START: ["step", "steps"], NOW_UPDATE: ["NOW update", "NOW updates"], TOOL_USE: ["tool use", "tool uses"],
  THOUGHT: ["thought", "thoughts"], ERROR: ["error", "errors"], USER_FEEDBACK: ["message", "messages"] };

// The run an entry belongs to: its run_id, or for a NOW update the run NOW.md names.
const runOf = (entry) => entry.run_id || (entry.type === "NOW_UPDATE" && entry.meta ? entry.meta.now_run_id : null) || null;

function folding() { return $("log-fold").checked && !state.log.types.size && !state.log.run && !state.log.q && !state.log.archive; }

function renderLog() {
  const entries = state.log.shown, nodes = [];
  const fold = folding();
  for (let i = 0; i < entries.length;) {
    let j = i + 1;
    const run = runOf(entries[i]);
    if (fold && run) while (j < entries.length && runOf(entries[j]) === run) j += 1;
    nodes.push(j - i > 1 ? runRow(entries.slice(i, j)) : entryItem(entries[i]));
    i = j;
  }
  fill($("log"), nodes);
  for (const item of $("log").querySelectorAll("li.entry")) {
    if (!state.fresh.has(Number(item.dataset.seq))) continue;
    item.classList.add("fresh");
    const fold = item.closest("li.run-fold");
    if (fold) fold.classList.add("fresh");  // a closed run's row shows that it grew
  }
}

// One row for entries of one run (newest first): its objective, outcome and what it did; opening it lists them.
function runRow(entries) {
  const runId = runOf(entries[0]), info = state.log.runs[runId] || {};
  const key = `${runId}:${entries[entries.length - 1].seq}`;
  const counts = {};
  for (const entry of entries) counts[entry.type] = (counts[entry.type] || 0) + 1;
  const did = Object.entries(FOLDED).filter(([type]) => counts[type]).map(([type, [one, many]]) => `${counts[type]} ${counts[type] === 1 ? one : many}`);
  const body = el("ol", { class: "entries fold-body", hidden: true }, entries.map(entryItem));
  const outcome = info.outcome || "";
  const head = el("button", { type: "button", class: "fold-head", "aria-expanded": "false",
    onclick: () => { const open = head.getAttribute("aria-expanded") !== "true"; head.setAttribute("aria-expanded", String(open));
      body.hidden = !open; open ? state.openFolds.add(key) : state.openFolds.delete(key); } },
    el("span", { class: "seq" }, `#${entries[entries.length - 1].seq}–${entries[0].seq}`),
    el("span", { class: "badge type-RUN_START" }, `run ${runId}`),
    outcome ? el("span", { class: `badge outcome outcome-${outcome.replace(/ /g, "-")}` }, outcome) : null,
    el("span", { class: "objective" }, info.objective || ""),
    el("span", { class: "muted" }, `${entriesText(entries.length)}${did.length ? ": " + did.join(", ") : ""}`
      + (info.entries > entries.length ? ` (${number(info.entries)} in all)` : "")),
    el("time", {}, span(entries[entries.length - 1].ts, entries[0].ts)));
  const classes = ["run-fold"];
  if (["error", "interrupted", "never ended"].includes(outcome) || counts.ERROR) classes.push("troubled");
  const row = el("li", { class: classes.join(" "), "data-run": runId }, head, body);
  if (state.openFolds.has(key)) { head.setAttribute("aria-expanded", "true"); body.hidden = false; }
  return row;
}

// -- search hits: marked with <mark> elements around text nodes (never parsed as HTML) -----------------------

function marks(text, query) { return Boolean(query && text && text.toLowerCase().includes(query.toLowerCase())); }

function highlighted(text, query) {
  const words = [].concat(query || []).filter((w) => w);
  if (!text || !words.length) return [text || ""];
  const pattern = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "giu");
  const parts = [];
  let at = 0;
  for (const match of text.matchAll(pattern)) {
    if (!match[0]) continue;
    if (match.index > at) parts.push(text.slice(at, match.index));
    parts.push(el("mark", {}, match[0]));
    at = match.index + match[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return parts;
}

// A text, cut after ``limit`` characters (a button shows the rest), with ``query`` (a string or words) marked;
// a text whose first mark lies past the cut is shown whole.
function textBlock(text, query) {
  const limit = 700;
  const marked = (part) => highlighted(part, query).some((node) => node instanceof Node);
  const whole = !text || text.length <= limit || (marked(text) && !marked(text.slice(0, limit)));
  if (whole) return el("p", { class: "text" }, highlighted(text || "", query));
  const block = el("p", { class: "text" }, highlighted(text.slice(0, limit), query), "…");
  block.append(" ", el("button", { class: "link", onclick: (event) => { event.target.remove(); fill(block, highlighted(text, query)); } }, "show all"));
  return block;
}

// -- live updates ----------------------------------------------------------------------------

function follow(name) {
  if (state.events) state.events.close();
  const source = new EventSource(`/api/agents/${encodeURIComponent(name)}/events`);
  state.events = source;
  source.addEventListener("open", () => { fill($("live"), "live"); $("live").classList.add("on"); });
  source.addEventListener("error", () => { fill($("live"), "reconnecting…"); $("live").classList.remove("on"); });
  source.addEventListener("change", (event) => changed(name, JSON.parse(event.data)));
}

async function changed(name, status) {
  if (name !== state.agent) return;
  if (status.newest_seq > state.newest && state.firstPage) await appendNewer();
  state.newest = Math.max(state.newest, status.newest_seq);
  showState(await api("/state"));  // NOW, sizes, facts and open runs: any of them may have changed
  scheduleActivity();
  if (state.nowVersions.length) await shown("now-diff-status", refreshNowVersions);
  if (state.tab === "reflection") await shown("reflection-status", () => Reflection.load());
}

async function appendNewer() {
  const request = logRequests;
  const data = await api("/log", logParams({ after: state.log.newestShown }));
  if (request !== logRequests) return;  // the timeline was reloaded meanwhile (another filter)
  if (data.has_newer) { await reloadLog(); return; }
  if (!data.entries.length) return;
  for (const entry of data.entries) {
    state.fresh.add(entry.seq);
    setTimeout(() => state.fresh.delete(entry.seq), 3000);  // a later redraw does not flash it again
  }
  state.log.shown = [...data.entries, ...state.log.shown];
  Object.assign(state.log.runs, data.runs || {});
  state.log.newestShown = data.entries[0].seq;
  renderLog();
  fill($("log-status"), `${state.log.shown.length} entries shown, newest first`);
}

// -- activity over time ----------------------------------------------------------------------------------

const ACTIVITY_EVERY_MS = 5000;
let activityTimer = null;

// Redraw the chart after a change: at once if it was drawn more than ACTIVITY_EVERY_MS ago, else once that
// much time has passed (changes meanwhile are drawn together).
function scheduleActivity() {
  if (activityTimer) return;
  const wait = Math.max(0, ACTIVITY_EVERY_MS - (Date.now() - state.activityAt));
  activityTimer = setTimeout(() => { activityTimer = null; shown("activity-scope", loadActivity); }, wait);
}

async function loadActivity() {
  state.activityAt = Date.now();
  const agent = state.agent;
  const data = await api("/activity");
  if (agent !== state.agent) return;
  ActivityChart.draw($("activity-chart"), data, state.entryTypes, (bin) => showInTimeline(bin.last_seq, 0));
  ActivityChart.legend($("activity-legend"), data, state.entryTypes);
  const totals = data.totals;
  const earlier = data.earlier.entries ? ` (${entriesText(data.earlier.entries)} before the first shown)` : "";
  fill($("activity-scope"), data.bins.length ? `${data.unit === "hour" ? "entries per hour" : "entries per day"}, UTC · `
    + `${entriesText(totals.entries)}${earlier}, ${plural(totals.compactions, "compaction")} · click a bar to open the timeline there` : "nothing logged yet");
}

// -- NOW.md's versions ----------------------------------------------------------------------------------

function wireNowHistory() {
  $("now-compare").addEventListener("click", () => showTab("now-history"));
  $("now-older").addEventListener("change", () => shown("now-diff-status", showNowDiff));
  $("now-newer").addEventListener("change", () => shown("now-diff-status", showNowDiff));
  $("now-versions-older").addEventListener("click", () => shown("now-diff-status", async () => {
    const data = await api("/now/versions", { before: state.nowVersions[state.nowVersions.length - 1].seq });
    state.nowVersions.push(...data.versions);
    fillNowChoices($("now-older").value, $("now-newer").value, data.has_older);
  }));
}

const versionName = (v) => v.whole ? `v${v.version} · ${when(v.ts)} · ${v.current_step || v.status || ""}`
  : `entry #${v.seq} · ${when(v.ts)} (not recorded whole)`;

function fillNowChoices(older, newer, hasOlder) {
  const options = (selected) => state.nowVersions.map((v) => el("option", { value: v.seq, disabled: !v.whole,
    selected: String(v.seq) === String(selected) }, versionName(v)));
  fill($("now-older"), options(older));
  fill($("now-newer"), options(newer));
  $("now-versions-older").disabled = !hasOlder;
}

// The versions from ``newer`` (default: the newest) down, that one compared with the version before it.
async function loadNowVersions(newer) {
  const agent = state.agent;
  const data = await api("/now/versions", newer ? { before: newer + 1 } : {});
  if (agent !== state.agent) return;
  state.nowVersions = data.versions;
  const whole = data.versions.filter((v) => v.whole);
  fillNowChoices(whole[1] && whole[1].seq, whole[0] && whole[0].seq, data.has_older);
  if (whole.length < 2) {
    fill($("now-diff"));
    fill($("now-diff-status"), whole.length ? "only one version of NOW.md so far" : "no NOW.md version recorded yet");
    return;
  }
  await showNowDiff();
}

// A live update: newer versions join the lists; what is compared stays as chosen.
async function refreshNowVersions() {
  const data = await api("/now/versions");
  const known = new Set(state.nowVersions.map((v) => v.seq));
  const added = data.versions.filter((v) => !known.has(v.seq) && v.seq > (state.nowVersions[0] || { seq: 0 }).seq);
  if (!added.length) return;
  state.nowVersions.unshift(...added);
  fillNowChoices($("now-older").value, $("now-newer").value, !$("now-versions-older").disabled);
}

async function compareNow(seq) {
  await loadNowVersions(seq);
  showTab("now-history");
}

async function showNowDiff() {
  const older = Number($("now-older").value), newer = Number($("now-newer").value);
  if (!older || !newer) return;
  const [from, to] = older < newer ? [older, newer] : [newer, older];
  const data = await api("/now/diff", { from, to });
  fill($("now-diff-status"), `v${data.older.version} (${when(data.older.ts)}) → v${data.newer.version} (${when(data.newer.ts)}): `,
    data.changed ? `${plural(data.changed, "line")} changed` : "no line changed", " · ",
    el("button", { class: "link", onclick: () => showInTimeline(data.newer.seq) }, `entry #${data.newer.seq} in the timeline`));
  const name = { "+": "add", "-": "del", " ": "same" };
  fill($("now-diff"), data.lines.map((line) => el("li", { class: `diff-line op-${name[line.op]}` },
    el("span", { class: "op", "aria-hidden": "true" }, line.op), el("span", { class: "line" }, line.text || " "))));
}

// -- conversations and the summary DAG ---------------------------------------------------------

function showConversations(conversations) {
  state.conversations = conversations;
  fill($("conversations"), conversations.length ? conversations.map((c) => el("li", {},
    el("button", { class: "conversation", onclick: () => openConversation(c.id) },
      el("strong", {}, c.title || c.session_id), el("span", { class: "muted" },
        ` ${c.session_id} · ${number(c.messages)} messages · ${number(c.summaries)} summaries · ${number(c.context_tokens)} tokens in context · ${when(c.last_active)}`))))
    : el("li", { class: "muted" }, "no conversations"));
  fill($("conversation"));
}

async function openConversation(id, before, focus) {
  const data = await api(`/conversations/${id}`, { before });
  const messages = el("ol", { class: "messages" }, data.messages.map(messageItem));
  const older = data.has_older ? el("button", { class: "link", onclick: async () => {
    const more = await api(`/conversations/${id}`, { before: data.messages[data.messages.length - 1].seq });
    messages.append(...more.messages.map(messageItem)); if (!more.has_older) older.remove();
  } }, "older messages") : null;
  fill($("conversation"), el("h3", {}, `${data.conversation.title || data.conversation.session_id}`),
    el("h4", {}, "Summary DAG ", el("small", { class: "muted" }, "click a summary to see what it was built from")),
    data.roots.length ? el("ul", { class: "tree" }, data.roots.map(summaryNode)) : el("p", { class: "muted" }, "no summaries: nothing compacted yet"),
    el("h4", {}, "Messages ", el("small", { class: "muted" }, "newest first")), messages, older);
  const target = focus != null ? messages.querySelector(`li.message[data-message="${focus}"]`) : null;
  if (target) { target.classList.add("target"); target.scrollIntoView({ block: "center" }); }
}

function summaryNode(summary) {
  const children = el("div", { class: "children" });
  const head = el("button", { class: `node ${summary.kind}`, "aria-expanded": "false", "data-summary": summary.id, onclick: () => expand(summary.id, head, children) },
    el("span", { class: "badge" }, `${summary.kind} · depth ${summary.depth}`),
    ` ${number(summary.descendant_count)} messages · ${when(summary.earliest_at)} → ${when(summary.latest_at)} · ${number(summary.token_count)} tokens`);
  return el("li", { class: "summary" }, head, el("p", { class: "text" }, summary.content), children);
}

async function expand(id, head, children) {
  if (head.getAttribute("aria-expanded") === "true") { head.setAttribute("aria-expanded", "false"); fill(children); return; }
  const data = await api(`/summaries/${encodeURIComponent(id)}`);
  head.setAttribute("aria-expanded", "true");
  fill(children, data.children ? el("ul", { class: "tree" }, data.children.map(summaryNode)) : el("ol", { class: "messages" }, data.messages.map(messageItem)));
}

function messageItem(message) {
  return el("li", { class: `message role-${message.role}`, "data-message": message.id },
    el("div", { class: "head" }, el("span", { class: "badge" }, message.tool_name ? `${message.role} ${message.tool_name}` : message.role),
      el("time", {}, when(message.created_at)), el("span", { class: "muted" }, `#${message.seq}`),
      message.summary_id ? el("span", { class: "muted" }, ` in ${message.summary_id}`) : null),
    textBlock(message.content),
    message.tool_calls.length ? el("pre", { class: "calls" }, JSON.stringify(message.tool_calls, null, 2)) : null);
}

// -- recall, notes, compactions ------------------------------------------------------------------

function wireRecall() {
  $("recall-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    fill($("recall-status"), "searching… (the first recall loads the embedding model)");
    try {
      const explain = $("recall-explain").checked;
      const data = await api("/recall", { q: $("recall-query").value, kind: $("recall-kind").value, explain: explain ? 1 : null });
      const words = queryWords($("recall-query").value);
      fill($("recall"), data.results.map((hit, rank) => el("li", { class: "hit", "data-id": hit.id },
        el("div", { class: "head" }, el("span", { class: "seq" }, `${rank + 1}.`), el("span", { class: "badge" }, `${hit.tier} · ${hit.kind}`),
          el("span", { class: "score" }, `score ${hit.score.toFixed(4)}`), el("span", { class: "muted" }, hit.source), el("time", {}, when(hit.created_at)),
          placeLink(hit.where || {})),
        textBlock(hit.content, hit.why ? hit.why.words : words),
        hit.superseded_by ? el("div", { class: "muted small superseded" }, `superseded by ${hit.superseded_by.id} (${when(hit.superseded_by.occurred_at)})`) : null,
        hit.why ? el("div", { class: "why muted small" }, whyText(hit.why)) : null)));
      fill($("recall-left-out"), explain ? leftOutText(data.left_out || {}) : null);
      const waiting = data.unindexed_archives + data.pending_cold_items;
      fill($("recall-status"), data.note || `${data.results.length} results, best first`,
        waiting ? el("span", { class: "warn" }, ` · ${waiting} items are not indexed for recall yet`) : null,
        data.pending_vectors ? el("span", { class: "muted" }, ` · ${data.pending_vectors} found by words only until their vectors are computed`) : null);
    } catch (error) { fill($("recall-status"), el("span", { class: "warn" }, error.message)); }
  });
  $("notes-older").addEventListener("click", async () => showNotes(await api("/notes", { before: state.notesCursor }), true));
  $("compactions-older").addEventListener("click", async () => showCompactions(await api("/compactions", { before: state.compactionsCursor }), true));
}

// The words of a recall query worth marking in its results (three letters or more).
function queryWords(text) { return [...new Set((text.match(/[\p{L}\p{N}_'-]{3,}/gu) || []).map((w) => w.toLowerCase()))]; }

// A recall hit's way to where it came from: its entry in the timeline (LOG.md or an archive), its archive
// (a compaction's summary), its message in the conversation, or its fact; notes and store items have no other place.
// ``label``: the link's text (default: where it goes); a note is marked in the notes list when it is shown there.
function placeLink(where, label) {
  if (where.seq != null && where.conversation == null) {
    return el("button", { class: "link place", onclick: () => showInTimeline(where.seq) }, label || `show #${where.seq} in the timeline`);
  }
  if (where.archive) return el("button", { class: "link place", onclick: () => filterArchive(where.archive) }, label || `open archive ${where.archive}`);
  if (where.conversation != null) {
    const conversation = state.conversations.find((c) => c.session_id === where.conversation);
    if (!conversation) return null;
    return el("button", { class: "link place", onclick: () => { showTab("conversations");
      openConversation(conversation.id, where.seq != null ? where.seq + 1 : undefined, where.message_id); } }, label || "show in the conversation");
  }
  if (where.note && label) {
    return el("button", { class: "link place", onclick: () => { showTab("recall");
      const item = $("notes").querySelector(`li[data-note="${CSS.escape(where.note)}"]`);
      if (item) { item.classList.add("target"); item.scrollIntoView({ block: "center" }); } } }, label);
  }
  if (where.fact) {
    return el("button", { class: "link place", onclick: () => { const dd = document.querySelector(`#facts dd[data-key="${CSS.escape(where.fact)}"]`);
      if (dd) { dd.classList.add("target"); dd.scrollIntoView({ block: "center" }); } } }, "show the fact");
  }
  return null;
}

// One line of a result's evidence, as `agentos recall --explain` prints it.
function whyText(why) {
  const fixed = (x) => Number(x).toFixed(2);
  let words = why.words.join(", ") || "none";
  if (why.common_words.length) words += ` (too common to weigh: ${why.common_words.join(", ")})`;
  const vector = why.vector_search !== "ran" ? why.vector_search : why.vector == null ? "not among the nearest" : fixed(why.vector);
  const parts = [`words: ${words}`, `word match ${fixed(why.word_score)}`, `vector ${vector}`];
  for (const [name, value] of Object.entries(why.features)) if (name !== "vector" && name !== "words") parts.push(`${name} ${fixed(value)}`);
  parts.push(`kind ${why.kind}` + (why.kind_bonus ? ` (+${why.kind_bonus})` : ""));
  if (why.recency != null) parts.push(`recency ×${fixed(why.recency)}`);
  if (why.superseded_by) parts.push("superseded");
  return `why: ${parts.join(" · ")} → ${fixed(why.score)}`;
}

function leftOutText(leftOut) {
  const reasons = Object.entries(leftOut);
  if (!reasons.length) return el("p", { class: "left-out" }, "left out: nothing");
  return el("ul", { class: "left-out" }, reasons.map(([reason, part]) => el("li", {},
    `left out, ${reason.replaceAll("_", " ")}: ${part.count} — `,
    part.examples.map((e) => [e.id, e.score != null ? ` ${Number(e.score).toFixed(2)}` : "", e.repeats ? ` repeats ${e.repeats}` : "",
      e.superseded_by ? ` superseded by ${e.superseded_by}` : "", e.content ? ` "${e.content}"` : ""].join("")).join("; "))));
}

function showNotes(data, more) {
  const items = data.notes.map((note) => el("li", { "data-note": note.id }, el("div", { class: "head" }, el("span", { class: "badge" }, note.kind),
    el("time", {}, when(note.created_at))), textBlock(note.text)));
  if (more) $("notes").append(...items); else fill($("notes"), items.length ? items : el("li", { class: "muted" }, "no notes"));
  fill($("notes-count"), number(data.total));
  state.notesCursor = data.notes.length ? data.notes[data.notes.length - 1].cursor : null;
  $("notes-older").disabled = !data.has_older;
}

function showCompactions(data, more) {
  const rows = data.compactions.map((c) => el("tr", {},
    el("td", {}, when(c.compacted_at)),
    el("td", {}, c.archive_exists ? el("button", { class: "link", onclick: () => filterArchive(c.archive_id) }, c.archive_id) : c.archive_id),
    el("td", { class: "num" }, number(c.entries_count)),
    el("td", { class: "num" }, `${c.original_size_kb.toFixed(1)} → ${c.new_size_kb.toFixed(1)} KB`),
    el("td", {}, c.indexed_at ? "indexed" : el("span", { class: "warn" }, "pending")),
    el("td", {}, el("details", {}, el("summary", {}, c.summary.slice(0, 80)), el("p", { class: "text" }, c.summary)))));
  if (more) $("compactions").append(...rows); else fill($("compactions"), rows.length ? rows : el("tr", {}, el("td", { colspan: 6, class: "muted" }, "no compactions yet")));
  state.compactionsCursor = data.compactions.length ? data.compactions[data.compactions.length - 1].id : null;
  $("compactions-older").disabled = !data.has_older;
}

document.addEventListener("DOMContentLoaded", start);
