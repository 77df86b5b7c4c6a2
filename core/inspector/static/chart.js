// AgentOS memory inspector: the activity chart, an SVG drawn from /api/agents/<agent>/activity.
// Every node is made with createElementNS and every label is a text node: nothing is parsed as markup.
"use strict";

const ActivityChart = (() => {
  const SVG = "http://www.w3.org/2000/svg";
  const WIDTH = 900, HEIGHT = 170, LEFT = 40, RIGHT = 64, TOP = 16, BOTTOM = 24;
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

  function svg(tag, attributes, ...children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attributes || {})) if (value != null) node.setAttribute(key, String(value));
    for (const child of children.flat()) if (child != null) node.append(child instanceof Node ? child : String(child));
    return node;
  }

  const title = (text) => svg("title", {}, text);
  const count = (n) => Number(n).toLocaleString("en-US");
  const memoryOf = (bin) => Object.values(bin.memory).reduce((a, b) => a + b, 0);

  // "Nov 20" for a day, "Nov 20 14:00" for an hour (UTC, as the keys are).
  function label(key, unit, short) {
    const [date, hour] = key.split("T");
    const [, month, day] = date.split("-");
    const name = `${MONTHS[Number(month) - 1]} ${Number(day)}`;
    if (unit !== "hour") return name;
    return short ? `${hour}:00` : `${name} ${hour}:00`;
  }

  function tooltip(bin, unit) {
    const types = Object.entries(bin.types).sort((a, b) => b[1] - a[1]).map(([type, n]) => `${type} ${n}`);
    const lines = [`${label(bin.at, unit)} UTC: ${count(bin.entries)} ${bin.entries === 1 ? "entry" : "entries"}`];
    if (types.length) lines.push(types.join(", "));
    for (const c of bin.compactions) lines.push(`compacted ${count(c.entries)} entries into ${c.archive_id}`);
    const m = bin.memory;
    lines.push(`memory so far: ${count(m.log)} LOG entries, ${count(m.facts)} facts, ${count(m.notes)} notes, ${count(m.messages)} messages`);
    if (bin.last_seq != null) lines.push("click to open the timeline here");
    return lines.join("\n");
  }

  // Draw ``data`` into ``host`` (replacing what it held); ``types`` orders the stacks (core's entry types);
  // ``open(bin)`` is called when a period with entries is clicked (or chosen with Enter).
  function draw(host, data, types, open) {
    const bins = data.bins;
    host.replaceChildren();
    if (!bins.length) return;
    const plotWidth = WIDTH - LEFT - RIGHT, plotHeight = HEIGHT - TOP - BOTTOM;
    const step = plotWidth / bins.length, barWidth = Math.max(1, Math.min(28, step * 0.72));
    const most = Math.max(1, ...bins.map((b) => b.entries));
    const memories = bins.map(memoryOf), largest = Math.max(1, ...memories);
    const y = (n) => TOP + plotHeight - (n / most) * plotHeight;
    const grown = (n) => TOP + plotHeight - (n / largest) * plotHeight;
    const chart = svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img",
      "aria-label": `LOG.md entries per ${data.unit}, compactions and memory growth` });
    chart.append(
      svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: TOP + plotHeight, y2: TOP + plotHeight, class: "axis" }),
      svg("line", { x1: LEFT, x2: WIDTH - RIGHT, y1: TOP, y2: TOP, class: "grid" }),
      svg("text", { x: LEFT - 6, y: TOP + 4, class: "tick end" }, count(most)),
      svg("text", { x: LEFT - 6, y: TOP + plotHeight, class: "tick end" }, "0"),
      svg("text", { x: WIDTH - RIGHT + 8, y: grown(memories[memories.length - 1]) + 4, class: "tick growth-label" },
        count(memories[memories.length - 1])),
      svg("text", { x: WIDTH - RIGHT + 8, y: grown(memories[memories.length - 1]) + 17, class: "tick" }, "memories"));
    bins.forEach((bin, i) => {
      const x = LEFT + i * step + (step - barWidth) / 2;
      const group = svg("g", { class: bin.entries ? "bin" : "bin empty", "data-at": bin.at,
        tabindex: bin.last_seq != null ? 0 : null, role: bin.last_seq != null ? "button" : null }, title(tooltip(bin, data.unit)));
      group.append(svg("rect", { x: LEFT + i * step, y: TOP, width: step, height: plotHeight, class: "hit" }));
      let top = TOP + plotHeight;
      for (const type of types) {
        const n = bin.types[type];
        if (!n) continue;
        const height = (n / most) * plotHeight;
        top -= height;
        group.append(svg("rect", { x, y: top, width: barWidth, height: Math.max(height, 0.5), class: `bar t-${type}`, "data-type": type }));
      }
      if (bin.compactions.length) {  // one mark a period; its tooltip names each compaction
        const cx = LEFT + (i + 0.5) * step, cy = TOP - 12;
        group.append(svg("path", { d: `M${cx - 5},${cy} L${cx + 5},${cy} L${cx},${cy + 7} Z`, class: "compaction",
          "data-archives": bin.compactions.map((c) => c.archive_id).join(" ") }));
        if (bin.compactions.length > 1) group.append(svg("text", { x: cx + 7, y: cy + 6, class: "tick" }, `×${bin.compactions.length}`));
      }
      if (bin.last_seq != null) {
        group.addEventListener("click", () => open(bin));
        group.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); open(bin); } });
      }
      chart.append(group);
    });
    const points = memories.map((m, i) => `${(LEFT + (i + 0.5) * step).toFixed(1)},${grown(m).toFixed(1)}`);
    chart.append(svg("polyline", { points: points.join(" "), class: "growth" },
      title("memory growth: LOG entries (archived ones too), facts, notes and conversation messages")));
    const last = points[points.length - 1].split(",");
    chart.append(svg("circle", { cx: last[0], cy: last[1], r: 3, class: "growth-end" }));
    const ticks = bins.length <= 3 ? bins.map((_, i) => i) : [0, Math.floor((bins.length - 1) / 2), bins.length - 1];
    for (const i of ticks) {
      const short = data.unit === "hour" && i > 0 && bins[i].at.slice(0, 10) === bins[ticks[0]].at.slice(0, 10);
      const anchor = i === 0 && bins.length > 1 ? "start" : i === bins.length - 1 && bins.length > 1 ? "end" : "middle";
      const x = anchor === "start" ? LEFT + i * step : anchor === "end" ? LEFT + (i + 1) * step : LEFT + (i + 0.5) * step;
      chart.append(svg("text", { x, y: HEIGHT - 6, class: `tick ${anchor}` }, label(bins[i].at, data.unit, short)));
    }
    host.append(chart);
  }

  // The legend: the types drawn, the compaction mark and the growth line.
  function legend(host, data, types) {
    const present = types.filter((type) => data.bins.some((bin) => bin.types[type]));
    const swatch = (cls) => svg("svg", { viewBox: "0 0 10 10", class: "swatch", "aria-hidden": "true" },
      cls === "compaction" ? svg("path", { d: "M0,1 L10,1 L5,9 Z", class: "compaction" })
        : cls === "growth" ? svg("line", { x1: 0, x2: 10, y1: 5, y2: 5, class: "growth" }) : svg("rect", { width: 10, height: 10, class: cls }));
    const item = (cls, text) => { const span = document.createElement("span"); span.className = "item"; span.append(swatch(cls), text); return span; };
    host.replaceChildren(...present.map((type) => item(`bar t-${type}`, type)),
      item("compaction", "compaction"), item("growth", "memory (LOG entries, facts, notes, messages)"));
  }

  return { draw, legend, label };
})();
