// The reflection tab: how far the agent's background reflection is (what `agentos reflect --status` shows) and
// the facts it learned, each with links to the entries it was read in. Uses app.js's helpers; text only.
"use strict";

const Reflection = (() => {
  // A source's link: a LOG entry opens the timeline there, a message its conversation, a note the notes list.
  function sourceLink(source, places) {
    const where = places[source];
    const [kind, key] = [source.slice(0, source.indexOf(":")), source.slice(source.indexOf(":") + 1)];
    const label = kind === "log" ? `#${key}` : kind === "msg" ? `message ${key}` : `note ${key.slice(0, 8)}`;
    const link = where ? placeLink(where, label) : null;
    return link ? Object.assign(link, { title: `open ${source}` }) : el("span", { class: "muted", title: "no longer there" }, label);
  }

  const links = (sources, places) => sources.map((source, i) => [i ? ", " : "", sourceLink(source, places)]);

  function figures(status, config) {
    const lag = status.lag, learned = status.learned;
    const rows = Object.entries(status.models).map(([model, m]) => el("tr", { "data-model": model },
      el("td", {}, model), el("td", { class: "num" }, number(m.calls)),
      el("td", { class: "num" }, `${number(m.failed)} (${(m.failure_rate * 100).toFixed(1)}%)`),
      el("td", { class: "num" }, number(m.repaired)), el("td", { class: "num" }, number(m.split)),
      el("td", { class: "num" }, number(m.quarantined)), el("td", { class: "num" }, number(m.rejected)),
      el("td", { class: "num" }, number(m.entries)), el("td", { class: "num" }, number(m.learned)), el("td", {}, when(m.last_at))));
    return [
      el("p", { class: "reflection-lag" }, `to read: ${entriesText(lag.log)} of LOG.md `
        + `(read up to #${number(status.log_mark)} of #${number(status.last_seq)}), ${plural(lag.messages, "message")}, ${plural(lag.notes, "note")}`),
      el("p", { class: "reflection-learned" }, `learned: ${plural(learned.facts, "fact")}, ${plural(learned.events, "event")}, `
        + `${plural(learned.contradictions, "contradiction")}`),
      el("p", { class: "muted small" }, `reflect.enabled: ${config.enabled} · model ${config.model} (${config.backend}) · `
        + `a pass every ${number(config.interval_s)} s while a session lasts, after each run and each compaction`),
      rows.length ? el("table", { class: "reflection-models" },
        el("thead", {}, el("tr", {}, ["model", "calls", "unusable replies", "repaired", "splits", "quarantined",
          "values rejected", "entries read", "learned", "last"].map((h) => el("th", {}, h)))),
        el("tbody", {}, rows)) : null,
    ];
  }

  function quarantineItem(item, places) {
    return el("li", { "data-item": item.item },
      el("div", { class: "head" }, sourceLink(item.item, places), el("span", { class: "muted" },
        ` ${plural(item.attempts, "attempt")} · model ${item.model} · failed ${when(item.last_failed_at)} · next try ${when(item.next_try)}`)),
      el("p", { class: "text reason" }, item.reason));
  }

  function factItem(fact, places) {
    return el("li", { class: "learned-fact", "data-key": fact.key },
      el("div", { class: "head" }, el("code", {}, fact.key), " = ", el("span", { class: fact.category === "secret" ? "value secret" : "value" }, fact.value),
        " ", el("span", { class: "badge" }, fact.category)),
      el("div", { class: "sources small" }, "from ", links(fact.sources, places),
        el("span", { class: "muted" }, ` · by ${fact.model} (prompt ${fact.prompt}) · ${when(fact.extracted_at)}`)),
      fact.contradicted_by.length ? el("ul", { class: "contradictions small" }, fact.contradicted_by.map((c) =>
        el("li", {}, el("span", { class: "badge alarm" }, "contradicted"), ` “${c.statement}” from `, links(c.sources, places)))) : null);
  }

  async function load() {
    const agent = state.agent;
    const data = await api("/reflection");
    if (agent !== state.agent) return;
    const status = data.status;
    const started = status.last_pass || status.learned.facts || status.quarantined.length;
    fill($("reflection-status"), started ? `last pass ${when(status.last_pass) || "–"}` : "reflection has not kept anything from this memory yet");
    fill($("reflection-figures"), figures(status, data.config));
    fill($("reflection-quarantine-count"), status.quarantined.length ? number(status.quarantined.length) : "");
    fill($("reflection-quarantine"), status.quarantined.length ? status.quarantined.map((q) => quarantineItem(q, data.places))
      : el("li", { class: "muted" }, "nothing"));
    fill($("reflection-facts-count"), data.facts.length ? number(data.facts.length) : "");
    fill($("reflection-facts"), data.facts.length ? data.facts.map((f) => factItem(f, data.places))
      : el("li", { class: "muted" }, "no learned facts"));
  }

  return { load };
})();
