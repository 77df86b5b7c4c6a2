// AgentOS memory inspector. Data comes from the JSON API of this server and is put in the page
// as text only (el() below never parses HTML), so nothing an agent stored can run as code.
"use strict";

const state = { agent: null, tab: "timeline", entryTypes: [], log: { types: new Set(), run: "", q: "", archive: "" },
  newest: 0, firstPage: true, events: null, notesCursor: null, compactionsCursor: null, openFacts: new Set() };
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
const when = (ts) => (ts ? ts.replace("T", " ").replace(/\.\d+Z$/, "Z") : "");
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
  wireTimeline(); wireRecall();
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
}

function rememberPlace() { history.replaceState(null, "", `#agent=${encodeURIComponent(state.agent || "")}&tab=${state.tab}`); }

async function openAgent(name) {
  state.agent = name;
  $("space-view").hidden = true;
  for (const button of document.querySelectorAll("#agents button")) button.setAttribute("aria-current", String(button.dataset.agent === name));
  rememberPlace();
  Object.assign(state.log, { types: new Set(), run: "", q: "", archive: "" });
  state.newest = 0;
  state.openFacts.clear();
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
  follow(name);
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
  $("log-clear").addEventListener("click", () => { Object.assign(state.log, { types: new Set(), run: "", q: "", archive: "" }); $("log-search").value = ""; $("log-run").value = ""; markChips(); reloadLog(); });
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

function logParams(page) {
  return { type: [...state.log.types], run: state.log.run, q: state.log.q, archive: state.log.archive, ...page };
}

function reloadLog() { return pageLog({}); }

let logRequests = 0;

async function pageLog(page) {
  const request = ++logRequests;  // only the newest request's answer is shown: an older one may arrive after it
  fill($("log-status"), "loading…");
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
  fill($("log"), entries.map(entryItem));
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
  const text = entry.unreadable ? el("p", { class: "warn" }, "this entry's line cannot be read (damaged, or moved by a compaction)") : textBlock(entry.text);
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
      entry.summary_of ? el("button", { class: "link archive-link", onclick: () => filterArchive(entry.summary_of) }, `open archive ${entry.summary_of}`) : null),
    text,
    meta.length ? el("details", { class: "meta" }, el("summary", {}, `metadata: ${meta.join(", ")}`),
      el("pre", {}, JSON.stringify(entry.meta, null, 2))) : null);
}

function textBlock(text) {
  const limit = 700;
  if (!text || text.length <= limit) return el("p", { class: "text" }, text || "");
  const block = el("p", { class: "text" }, text.slice(0, limit) + "…");
  block.append(" ", el("button", { class: "link", onclick: (event) => { event.target.remove(); fill(block, text); } }, "show all"));
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
}

async function appendNewer() {
  const request = logRequests;
  const data = await api("/log", logParams({ after: state.log.newestShown }));
  if (request !== logRequests) return;  // the timeline was reloaded meanwhile (another filter)
  if (data.has_newer) { await reloadLog(); return; }
  if (!data.entries.length) return;
  const items = data.entries.map(entryItem);
  for (const item of items) item.classList.add("fresh");
  $("log").prepend(...items);
  state.log.newestShown = data.entries[0].seq;
  fill($("log-status"), `${$("log").children.length} entries shown, newest first`);
}

// -- conversations and the summary DAG ---------------------------------------------------------

function showConversations(conversations) {
  fill($("conversations"), conversations.length ? conversations.map((c) => el("li", {},
    el("button", { class: "conversation", onclick: () => openConversation(c.id) },
      el("strong", {}, c.title || c.session_id), el("span", { class: "muted" },
        ` ${c.session_id} · ${number(c.messages)} messages · ${number(c.summaries)} summaries · ${number(c.context_tokens)} tokens in context · ${when(c.last_active)}`))))
    : el("li", { class: "muted" }, "no conversations"));
  fill($("conversation"));
}

async function openConversation(id, before) {
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
      fill($("recall"), data.results.map((hit, rank) => el("li", { class: "hit" },
        el("div", { class: "head" }, el("span", { class: "seq" }, `${rank + 1}.`), el("span", { class: "badge" }, `${hit.tier} · ${hit.kind}`),
          el("span", { class: "score" }, `score ${hit.score.toFixed(4)}`), el("span", { class: "muted" }, hit.source), el("time", {}, when(hit.created_at))),
        textBlock(hit.content),
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
  const items = data.notes.map((note) => el("li", {}, el("div", { class: "head" }, el("span", { class: "badge" }, note.kind),
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
