// The fedtopic dashboard page: live over /api/ and server-sent events, or static over data a report inlined.
"use strict";

(function () {
  const C = window.FedCharts;
  const INLINE = window.FEDTOPIC_REPORT || null; // set by `fedtopic report`
  const store = {state: null, rows: {}, cursors: {}, topics: null, ledger: null, panel: "parties",
    topicParty: null, selected: null, lambda: 1.0};

  const $ = (id) => document.getElementById(id);
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") el.className = v; else if (k === "style") el.style.cssText = v; // CSSOM: allowed by the CSP
      else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v);
    }
    for (const k of kids) if (k !== null && k !== undefined) el.append(k instanceof Node ? k : String(k));
    return el;
  }
  const ago = (s) => s === null || s === undefined ? "–" : (s < 1 ? "now" : s < 90 ? `${Math.round(s)} s ago`
    : s < 5400 ? `${Math.round(s / 60)} min ago` : `${(s / 3600).toFixed(1)} h ago`);
  const at = (t) => t === null || t === undefined ? "–" : new Date(t * 1000).toLocaleString();
  const bytes = (n) => n >= 1e9 ? (n / 1e9).toFixed(2) + " GB" : n >= 1e6 ? (n / 1e6).toFixed(2) + " MB"
    : n >= 1e3 ? (n / 1e3).toFixed(1) + " kB" : `${n} B`;

  // ---- data ---------------------------------------------------------------------------------------------
  function mergeRows(rows) {
    for (const [party, list] of Object.entries(rows || {})) {
      const byRound = store.rows[party] || (store.rows[party] = new Map());
      for (const r of list) byRound.set(r.r, r);
    }
  }
  function sortedRows(party) {
    const m = store.rows[party];
    return m ? Array.from(m.values()).sort((a, b) => a.r - b.r) : [];
  }
  function cursorQuery() {
    return Object.entries(store.cursors).map(([p, n]) => `${encodeURIComponent(p)}:${n}`).join(",");
  }
  async function getJSON(path) {
    const resp = await fetch(path, {cache: "no-store"});
    if (!resp.ok) throw new Error(`${path}: HTTP ${resp.status}`);
    return resp.json();
  }
  async function loadTopics() {
    if (INLINE) { store.topics = INLINE.topics; return; }
    const q = store.topicParty ? `?party=${encodeURIComponent(store.topicParty)}` : "";
    store.topics = await getJSON(`api/topics${q}`);
  }
  async function loadLedger() {
    store.ledger = INLINE ? INLINE.ledger : await getJSON("api/ledger");
  }

  // ---- header and parties -------------------------------------------------------------------------------
  function renderHeader() {
    const s = store.state; if (!s) return;
    const run = s.run;
    $("title").textContent = run.title || "fedtopic";
    const who = run.mode === "centralised" ? "centralised" : `${run.parties} part${run.parties === 1 ? "y" : "ies"}`;
    const bits = [run.algorithm, run.topics ? `K = ${run.topics}` : null, who,
      run.mode === "sync" ? `protection ${run.protection || "none"}` : run.transport ? `over ${run.transport}` : null,
      run.dataset, run.viewer ? `seen as ${run.viewer}` : null].filter(Boolean);
    $("run-line").textContent = bits.join(" · ");
    // the run's budget counts the runtime's rounds, which the histories give; an aggregator counts its sessions'
    // rounds (gFedNTM's: mini-batch steps), so those only when no history is at hand
    // one count everywhere (runs/round_count.py): training rounds 1..R, the setup exchange before them is "setup"
    const known = s.parties.filter((p) => p.round !== null && p.round !== undefined);
    const own = known.filter((p) => p.round_source === "history");
    const rounds = own.length ? own.map((p) => p.training_round) : known.map((p) => p.round);
    const top = rounds.length ? Math.max(...rounds) : null;
    $("round-counter").textContent = top === null ? "–" : own.length && top === 0 ? "setup" : String(top);
    const total = run.rounds ?? run.iterations;
    $("round-total").textContent = total ? ` / ${total}` : "";
    const st = $("run-state"); st.textContent = run.state; st.className = `badge ${run.state}`;
    $("live").textContent = INLINE ? "report (static)" : "live";
  }

  function renderParties() {
    const s = store.state; if (!s) return;
    $("note").textContent = s.run.note || "";
    const body = $("party-table").tBodies[0];
    if (!s.parties.length) {
      body.replaceChildren(h("tr", {}, h("td", {colspan: 8, class: "muted"}, s.run.mode === "centralised"
        ? "A centralised run: one process trained on every document; there are no parties."
        : "No party has written a history line yet.")));
      $("aggregates").replaceChildren();
      return;
    }
    body.replaceChildren(...s.parties.map((p) => {
      const stale = p.staleness && Object.keys(p.staleness).length
        ? Object.entries(p.staleness).map(([q, v]) => `${q}:${v}`).join(" ")
        : (p.rounds_behind ? `${p.rounds_behind} round${p.rounds_behind === 1 ? "" : "s"} behind` +
           // a remote figure is compared with the same answer's figures only, never with the histories here
           (p.round_source && p.round_source !== "history" ? ` by the ${p.round_source}'s figures` : "") : "–");
      const why = p.why ? ` (${p.why})` : (p.awaited ? " (the round waits for it)" : "");
      return h("tr", {"data-party": p.party},
        h("td", {}, p.party),
        h("td", {}, h("span", {class: `badge ${p.status}`, "data-status": p.status}, p.status), why),
        h("td", {}, p.round === null || p.round === undefined ? "–" : p.round_source && p.round_source !== "history"
          ? h("span", {title: `the ${p.round_source}'s round number, which need not count the runtime's rounds ` +
                               "(gFedNTM's sessions count mini-batch steps)"}, `${p.round} `,
              h("span", {class: "muted"}, `(${p.round_source})`))
          : (p.training_round === 0 ? "setup" : p.training_round ?? p.round)),
        h("td", {}, INLINE ? at(p.last_time) : ago(p.age_s)),  // a report is read later: when, not how long ago
        h("td", {}, stale),
        h("td", {}, p.own_history ? bytes(p.bytes_up) : "–"),
        h("td", {}, p.own_history ? bytes(p.bytes_down) : "–"),
        h("td", {}, p.contributors ? p.contributors.join(", ") : "–"));
    }));
    renderAggregates();
  }

  function renderAggregates() {
    const box = $("aggregates");
    const ids = store.state.parties.map((p) => p.party);
    const rows = sortedRows(Object.keys(store.rows)[0]);
    const recent = rows.filter((r) => r.u !== undefined).slice(-40);
    if (!recent.length || store.state.run.mode !== "sync") {
      box.replaceChildren(h("span", {class: "muted"}, store.state.run.mode === "sync" ? "no rounds yet"
        : "asynchronous: every party trains on the latest counts it can read (staleness above)"));
      return;
    }
    box.style.gridTemplateColumns = `auto repeat(${recent.length}, 14px)`;
    const kids = [];
    for (const pid of ids) {
      kids.push(h("div", {class: "name"}, pid));
      for (const r of recent) {
        const inIt = !r.in || r.in.includes(pid);
        kids.push(h("div", {class: `cell${inIt ? " in" : ""}`, title: `round ${r.r}: ${inIt ? "in" : "not in"}`}));
      }
    }
    box.replaceChildren(...kids);
  }

  // ---- convergence, time, privacy ----------------------------------------------------------------------
  function partySeries(field) {
    return Object.keys(store.rows).sort().map((pid) => ({name: pid,
      points: sortedRows(pid).filter((r) => r[field] !== undefined && r[field] !== null).map((r) => [r.r, r[field]])}));
  }
  function qualityName() {
    const p = (store.state && store.state.parties.find((x) => x.quality_name)) || {};
    return p.quality_name || "quality";
  }
  function renderConvergence() {
    const sum = store.state && store.state.run.summary;
    const parts = [];
    if (sum) {
      if (sum.perplexity !== undefined && sum.perplexity !== null) parts.push(`held-out perplexity ${C.fmt(sum.perplexity)}`);
      if (sum.centralized_perplexity) parts.push(`centralised ${C.fmt(sum.centralized_perplexity)}`);
      if (sum.standalone_perplexity) parts.push(`stand-alone ${C.fmt(sum.standalone_perplexity)}`);
      if (sum.npmi !== undefined && sum.npmi !== null) parts.push(`NPMI ${Number(sum.npmi).toFixed(3)}`);
    }
    $("headline").textContent = parts.length ? "At the end: " + parts.join(" · ")
      : "Held-out perplexity is computed when the run ends.";
    const series = partySeries("q"), curve = sum && sum.perplexity_curve;
    if (!series.some((x) => x.points.length) && curve && Object.keys(curve).length) {
      // a `train` run keeps no per-round history: its held-out perplexity every --eval-every iterations instead
      const many = Object.keys(curve).length > 1;
      C.lineChart($("chart-quality"), Object.entries(curve).map(([k, pts]) => ({
        name: many ? `party ${Number(k) + 1}` : "model", points: pts})), {xlabel: "iteration",
        ylabel: "held-out perplexity"});
      return;
    }
    C.lineChart($("chart-quality"), series, {xlabel: "round", ylabel: qualityName(), empty: noHistory()
      || "no quality figure yet"});
  }
  function noHistory() {
    const run = store.state ? store.state.run : {};
    return run.finished && !Object.keys(store.rows).length
      ? "this run kept no per-round history (a train run's figures are in its summary)" : null;
  }
  function renderTime() {
    const pids = Object.keys(store.rows).sort();
    const totals = pids.map((pid) => {
      const rows = sortedRows(pid);
      const sum = (k) => rows.reduce((a, r) => a + (r[k] || 0), 0);
      return {name: pid, parts: [sum("c"), sum("x"), sum("w")]};
    });
    const keys = ["computing", "exchanging", "waiting"], colors = ["#2563eb", "#f59e0b", "#9ca3af"];
    C.stackedBars($("chart-time-totals"), totals, keys, colors, {xlabel: "party", empty: noHistory()});
    const sel = $("time-party");
    if (sel.options.length !== pids.length) {
      const keep = sel.value;
      sel.replaceChildren(...pids.map((p) => h("option", {value: p}, p)));
      if (pids.includes(keep)) sel.value = keep;
    }
    const rows = sortedRows(sel.value || pids[0]).slice(-200);
    C.stackedBars($("chart-time-rounds"), rows.map((r) => ({name: String(r.r), parts: [r.c, r.x, r.w]})), keys, colors,
      {xlabel: "round", empty: noHistory()});
  }
  function renderPrivacy() {
    const run = store.state ? store.state.run : {};
    const prot = run.mode === "sync" ? `Protection in force: ${run.protection || "none"}.`
      : run.mode === "async" ? `Channels ${run.transport === "chain" ? "on a chain, sealed with AES-GCM per CP" : "on an in-process board"}.`
      : "";
    $("protection-line").textContent = prot;
    $("seen-line").textContent = run.sees ? `What can be seen: ${run.sees}.` : "";
    const series = partySeries("e");
    const hl = run.epsilon_budget ? [{y: run.epsilon_budget, label: `budget ε = ${run.epsilon_budget}`}] : [];
    C.lineChart($("chart-epsilon"), series, {xlabel: "round", ylabel: "ε spent", hlines: hl,
      empty: "no differential privacy in this run: no ε is spent"});
  }

  // ---- topics --------------------------------------------------------------------------------------------
  function ranked(t) { return rankedN(t, 10); }
  // A live table is rebuilt whenever new topics arrive: what is typed and not yet saved, and what this page
  // saved after the topics it shows were fetched, must survive the rebuild.
  const drafts = {};
  const savedHere = {};
  function labelOf(id) {
    const k = String(id);
    if (k in savedHere) return savedHere[k];
    return (store.topics && store.topics.labels && store.topics.labels[k]) || "";
  }
  function renderTopics() {
    const T = store.topics;
    const sel = $("topic-party");
    const parties = (T && T.parties) || [];
    if (sel.options.length !== parties.length) {
      sel.replaceChildren(...parties.map((p) => h("option", {value: p}, p)));
    }
    if (T && T.party) sel.value = T.party;
    sel.parentElement.hidden = parties.length < 2;
    if (!T || !T.topics || !T.topics.length) {
      $("topic-table").tBodies[0].replaceChildren(h("tr", {}, h("td", {colspan: 5}, "no topics yet (they come with round 0's line)")));
      $("topic-map").replaceChildren();
      return;
    }
    $("topic-round").textContent = T.round !== null && T.round >= 0 ? `round ${T.round}` : "final model";
    const top = Math.max(...T.topics.flatMap((t) => t.weights.slice(0, 10)));
    const active = document.activeElement;
    const editing = active && active.classList.contains("label-input") ? active.getAttribute("data-topic") : null;
    const rows = T.topics.slice().sort((a, b) => a.id - b.id).map((t) => {
      const k = String(t.id);
      const input = h("input", {class: "label-input", value: k in drafts ? drafts[k] : labelOf(t.id), "data-topic": t.id,
        placeholder: "label…", "aria-label": `label of topic ${t.id}`});
      if (INLINE) input.setAttribute("disabled", "disabled");
      if (!(k in drafts) && labelOf(t.id)) markSaved(input, true);
      input.addEventListener("input", () => { drafts[k] = input.value; markSaved(input, false); });
      input.addEventListener("change", () => saveLabel(t.id, input));
      const words = ranked(t).map((i) => h("span", {class: "word", title: `φ = ${t.weights[i]}, p(w) = ${t.marginal[i]}`},
        t.words[i], h("span", {class: "bar", style: `width:${Math.max(1, 40 * t.weights[i] / top).toFixed(1)}px`})));
      const tr = h("tr", {"data-topic": t.id, class: store.selected === t.id ? "selected" : ""},
        h("td", {}, t.id), h("td", {}, input),
        h("td", {}, t.prevalence === null || t.prevalence === undefined ? "–" : (100 * t.prevalence).toFixed(1) + " %"),
        h("td", {}, t.drift === null || t.drift === undefined ? "–" : t.drift.toFixed(3)),
        h("td", {class: "words"}, ...words));
      tr.addEventListener("click", (ev) => { if (ev.target.tagName !== "INPUT") { store.selected = t.id; renderTopics(); } });
      return tr;
    });
    $("topic-table").tBodies[0].replaceChildren(...rows);
    const again = editing === null ? null : document.querySelector(`input.label-input[data-topic='${editing}']`);
    if (again) { again.focus(); again.setSelectionRange(again.value.length, again.value.length); }
    renderMap(T);
    renderTerms(T);
  }
  // pyLDAvis's term bars: the selected topic's words at λ, each word's share of all tokens (p(w)) beside its
  // share in this topic, p(w | k)·p(k) (the topic's tokens that are this word, as a share of all tokens)
  function renderTerms(T) {
    const svg = $("term-bars");
    svg.replaceChildren();
    const t = T.topics.find((x) => x.id === store.selected) || T.topics.slice().sort((a, b) => a.id - b.id)[0];
    const share = t.prevalence === null || t.prevalence === undefined ? 1 / T.topics.length : t.prevalence;
    $("term-title").textContent = `topic ${t.id}${labelOf(t.id) ? ": " + labelOf(t.id) : ""} · λ = ${store.lambda.toFixed(2)}`;
    const order = rankedN(t, 30);
    const top = Math.max(1e-12, ...order.map((i) => Math.max(t.marginal[i], t.weights[i] * share)));
    const x0 = 110, width = 400, row = 18;
    svg.setAttribute("viewBox", `0 0 520 ${12 + order.length * row}`);
    order.forEach((i, n) => {
      const y = 6 + n * row;
      const g = C.svgEl("g", {class: "term", "data-word": t.words[i]});
      g.append(C.svgEl("text", {x: x0 - 6, y: y + 11, "text-anchor": "end"}, t.words[i]));
      g.append(C.svgEl("rect", {x: x0, y, height: row - 4, width: width * t.marginal[i] / top, class: "overall"}));
      g.append(C.svgEl("rect", {x: x0, y, height: row - 4, width: width * t.weights[i] * share / top, class: "in-topic"}));
      g.append(C.svgEl("title", {}, `${t.words[i]}: ${(100 * t.marginal[i]).toFixed(3)} % of all tokens, ` +
        `${(100 * t.weights[i] * share).toFixed(3)} % in topic ${t.id} (φ = ${t.weights[i].toPrecision(3)})`));
      g.addEventListener("mouseenter", () => sizeByWord(T, t.words[i]));
      g.addEventListener("mouseleave", () => renderMap(T));
      svg.append(g);
    });
  }
  function rankedN(t, n) {
    const lam = store.lambda;
    const score = (i) => lam * Math.log(t.weights[i]) + (1 - lam) * Math.log(t.weights[i] / t.marginal[i]);
    return t.words.map((w, i) => i).sort((a, b) => score(b) - score(a) || a - b).slice(0, n);
  }
  // hovering a word: every bubble sized by p(k | w) ∝ φ_kw·p(k), from the topics that list the word among their
  // relevance candidates (a topic that does not is too small for it to show)
  function sizeByWord(T, word) {
    const weights = T.topics.map((t) => {
      const i = t.words.indexOf(word);
      const share = t.prevalence === null || t.prevalence === undefined ? 1 / T.topics.length : t.prevalence;
      return i < 0 ? 0 : t.weights[i] * share;
    });
    const total = weights.reduce((a, b) => a + b, 0) || 1;
    for (const c of $("topic-map").querySelectorAll("circle")) {
      const k = T.topics.findIndex((t) => String(t.id) === c.getAttribute("data-topic"));
      const p = weights[k] / total;
      c.setAttribute("r", String(Math.max(0.004, Math.sqrt(p) * 0.3)));  // inside the map at any share
      c.setAttribute("data-word-share", p.toFixed(4));
    }
    $("map-note").textContent = `bubble area: how the weight of “${word}” splits among the topics`;
  }
  function markSaved(input, saved) {
    input.classList.toggle("saved", saved);
    if (saved) input.setAttribute("data-saved", "1"); else input.removeAttribute("data-saved");
  }
  function renderMap(T) {
    const svg = $("topic-map");
    svg.replaceChildren();
    $("map-note").textContent = T.map ? "distance: Jensen–Shannon between topics (principal coordinates); area: share"
      + (T.has_prevalence ? "" : " (equal: this algorithm has no topic shares)") : (T.map_note || "");
    if (!T.map) return;
    const xs = T.map.map((p) => p[0]), ys = T.map.map((p) => p[1]);
    const span = Math.max(1e-9, ...xs.map(Math.abs), ...ys.map(Math.abs));
    const bubbles = T.topics.map((t, k) => {
      const share = t.prevalence === null || t.prevalence === undefined ? 1 / T.topics.length : t.prevalence;
      const r = Math.max(0.02, Math.sqrt(share) * 0.5);
      return {t, r, cx: T.map[k][0] / span * (1.0 - r), cy: -T.map[k][1] / span * (1.0 - r)};
    });
    // every circle first, the largest at the back, then every name on top: a circle never hides a name
    [...bubbles].sort((a, b) => b.r - a.r).forEach(({t, r, cx, cy}) => {
      const c = C.svgEl("circle", {cx, cy, r, class: store.selected === t.id ? "selected" : "", "data-topic": t.id});
      c.append(C.svgEl("title", {}, `topic ${t.id}${labelOf(t.id) ? ": " + labelOf(t.id) : ""}`));
      c.addEventListener("click", () => { store.selected = t.id; renderTopics(); });
      svg.append(c);
    });
    const placed = [];  // names nudged down until none overlaps another (greedy, in the map's units)
    bubbles.forEach(({t, cx, cy}) => {
      const label = labelOf(t.id);
      const name = label ? (label.length > 16 ? label.slice(0, 15) + "…" : label) : String(t.id);
      let y = cy;
      for (let i = 0; i < 20 && placed.some((p) => Math.abs(p.y - y) < 0.09 &&
           Math.abs(p.x - cx) < 0.03 * (p.n + name.length) / 2 + 0.02); i++) y += 0.09;
      placed.push({x: cx, y, n: name.length});
      svg.append(C.svgEl("text", {x: cx, y, class: label ? "map-label" : "", "data-topic": t.id}, name));
    });
  }
  async function saveLabel(id, input) {
    const k = String(id), value = input.value;
    const resp = await fetch(`api/labels/${id}`, {method: "PUT", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({label: value})});
    // the table may have been rebuilt while the request was out: mark the input that shows this topic now
    const live = document.querySelector(`input.label-input[data-topic='${k}']`) || input;
    if (resp.ok) {
      const labels = (await resp.json()).labels;
      if (store.topics) store.topics.labels = labels;
      savedHere[k] = labels[k] || "";
      if (drafts[k] === value) delete drafts[k];
      if (!(k in drafts)) { live.value = savedHere[k]; markSaved(live, true); }
    } else {
      markSaved(live, false);
      live.title = (await resp.json()).detail || "not saved";
    }
  }
  function exportRows() {
    return (store.topics && store.topics.topics || []).slice().sort((a, b) => a.id - b.id).map((t) => ({
      id: t.id, label: labelOf(t.id), prevalence: t.prevalence, drift: t.drift,
      words: ranked(t).map((i) => t.words[i]), weights: ranked(t).map((i) => t.weights[i])}));
  }
  function download(name, type, text) {
    const a = h("a", {href: URL.createObjectURL(new Blob([text], {type})), download: name});
    document.body.append(a); a.click(); a.remove();
  }
  function csvCell(v) { const s = String(v === null || v === undefined ? "" : v); return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s; }

  // ---- ledger --------------------------------------------------------------------------------------------
  function renderLedger() {
    const L = store.ledger;
    const run = store.state ? store.state.run : {};
    const audit = (L && L.audit) || (store.state && store.state.audit);
    $("audit-line").textContent = run.transport !== "chain" ? "This run has no chain (its parties do not publish on a ledger)."
      : run.kind === "simulate" || run.kind === "demo" ? `The ${run.kind === "demo" ? "demo" : "simulation"}'s chain is embedded in its process: these are its parties' own publication records (ledger audit runs on a consortium's chain).`
      : audit ? `ledger audit has verified ${audit.rounds_verified} rounds through block ${audit.through_block}; ${audit.failures} failed.`
      : "ledger audit has not run on this consortium yet (fedtopic ledger audit CONFIG).";
    const all = (L && L.publications) || [];
    const pubs = all.slice(-300).reverse();
    $("ledger-count").textContent = all.length ? `${all.length.toLocaleString()} publications` +
      (all.length > pubs.length ? `; the latest ${pubs.length} are listed, newest first.` : ", newest first.") : "";
    $("ledger-table").tBodies[0].replaceChildren(...pubs.map((p) => h("tr", {},
      h("td", {}, p.block === undefined ? "–" : p.block), h("td", {}, p.party), h("td", {}, p.round),
      h("td", {}, p.chunks || 1), h("td", {}, p.bytes === undefined ? "–" : bytes(p.bytes)),
      h("td", {}, p.gas === undefined || p.gas === null ? "–" : p.gas.toLocaleString()))));
  }

  // ---- wiring --------------------------------------------------------------------------------------------
  const RENDER = {parties: renderParties, convergence: renderConvergence, time: renderTime, privacy: renderPrivacy,
    topics: renderTopics, ledger: renderLedger};
  function render() { renderHeader(); RENDER[store.panel](); }
  async function show(panel) {
    store.panel = panel;
    for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.panel === panel);
    for (const s of document.querySelectorAll(".panel")) s.classList.toggle("active", s.id === `panel-${panel}`);
    if (panel === "topics" && !INLINE) await loadTopics().catch(() => {});
    if (panel === "ledger" && !INLINE) await loadLedger().catch(() => {});
    render();
  }
  let lastTopicsVersion = -1;
  async function onUpdate(msg) {
    store.state = msg.state;
    mergeRows(msg.rows);
    Object.assign(store.cursors, msg.cursors || {});
    if (store.panel === "topics" && store.state.version !== lastTopicsVersion) {
      lastTopicsVersion = store.state.version;
      await loadTopics().catch(() => {});
    }
    if (store.panel === "ledger") await loadLedger().catch(() => {});
    render();
  }
  function connect() {
    const es = new EventSource(`api/events?since=${cursorQuery()}`);
    es.addEventListener("update", (ev) => onUpdate(JSON.parse(ev.data)));
    es.onerror = () => { $("live").textContent = "reconnecting…"; };
    es.onopen = () => { $("live").textContent = "live"; };
  }

  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => show(b.dataset.panel));
  $("lambda").addEventListener("input", (ev) => {
    store.lambda = Number(ev.target.value);
    $("lambda-value").textContent = store.lambda.toFixed(2);
    renderTopics();
  });
  $("topic-party").addEventListener("change", async (ev) => { store.topicParty = ev.target.value; await loadTopics(); renderTopics(); });
  $("time-party").addEventListener("change", renderTime);
  $("export-json").addEventListener("click", () => download("topics.json", "application/json", JSON.stringify(exportRows(), null, 2)));
  $("export-csv").addEventListener("click", () => {
    const lines = ["id,label,prevalence,drift,words"].concat(exportRows().map((r) =>
      [r.id, r.label, r.prevalence, r.drift, r.words.join(" ")].map(csvCell).join(",")));
    download("topics.csv", "text/csv", lines.join("\n") + "\n");
  });

  // a centralised run has no parties: it opens on its curve, not on an empty Parties tab (unless a tab was
  // clicked while the page loaded: that choice stands)
  async function openFirst() {
    if (store.state.run.mode === "centralised" && store.panel === "parties") await show("convergence");
    else render();
  }
  async function start() {
    if (INLINE) {
      store.state = INLINE.state; mergeRows(INLINE.rows); store.topics = INLINE.topics; store.ledger = INLINE.ledger;
      await openFirst();
      return;
    }
    const [state, hist] = await Promise.all([getJSON("api/state"), getJSON("api/history")]);
    store.state = state; mergeRows(hist.rows); store.cursors = hist.cursors;
    await openFirst();
    connect();
  }
  start();
})();
