// memo web UI: plain JavaScript, no build step, no external resources.
//
// Safety rule (reliability.md R14): stored memories are attacker-controllable text, so every
// value that comes from the API is put on the page with textContent / createElement only,
// never innerHTML.  A memory holding <script> or <img onerror> is shown verbatim and never
// runs (the CSP forbids inline script too: two locks on the same door).
//
// The bearer token arrives in the URL fragment (#token=...): fragments are never sent to a
// server nor put in a Referer.  It is moved to sessionStorage (this tab only) and removed
// from the address bar, so it does not end up in history, bookmarks or screen shares.
"use strict";

(() => {
  const TOKEN_KEY = "memo-token";
  const SNIPPET_CHARS = 400;
  const $ = (id) => document.getElementById(id);
  let token = null;
  let lastSearch = null; // the last search document; re-rendered when "explain" toggles
  let searchSeq = 0;     // only the newest search renders (back/forward can overlap one)
  // GET /api/form: each profile's limit {default, max}, the words explain takes and each
  // `memo search` flag's query parameter, from the server's definitions (the page keeps no
  // second copy of any).
  let form = { limits: {}, explain: { true: [], false: [] }, flags: {} };
  let recordOpener = null; // the result button that opened the record view (focus returns there)

  // --- small DOM helpers (text only) ----------------------------------------------------
  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function fmt(value) {
    if (typeof value !== "number") return value === null || value === undefined ? "–" : String(value);
    if (value !== 0 && Math.abs(value) < 1e-3) return value.toExponential(3);
    return Number.isInteger(value) ? String(value) : value.toPrecision(4);
  }

  // A number shown rounded, with the exact JSON value in data-value (the test compares
  // the page with the API document: the UI renders the same numbers, seed §7).
  function num(field, value, className) {
    const node = el("span", className || "num", fmt(value));
    node.dataset.field = field;
    node.dataset.value = value === null || value === undefined ? "" : String(value);
    return node;
  }

  function labelled(label, child) {
    const span = el("span", "kv");
    span.append(el("span", "k", label + " "), child);
    return span;
  }

  // Bidi controls (embeddings, overrides, isolates) shown as <U+202E>.  For the server's
  // sentences only (reasons, hints, notes, errors): they quote stored values, such as
  // namespace names, inside one line of text, where an override would reverse the rest of
  // the sentence.  Every other stored value is rendered as is, in an element of its own
  // that the CSS isolates (app.css, unicode-bidi).
  const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;
  function showControls(text) {
    if (text === null || text === undefined) return text;
    return String(text).replace(BIDI_CONTROLS,
      (c) => "<U+" + c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0") + ">");
  }

  // A search's advice in the page's words: the search document is the CLI's (the same on
  // every surface), so its hint names `memo search` flags; each becomes its query parameter
  // (form.flags: derived on the server from the CLI's option table).  "raise max_tokens
  // (--max-tokens) to ..." -> "raise max_tokens to ...".  Other commands' flags stay.
  const FLAG = /(^|[^\w-])(--[a-z][a-z0-9-]*)/g;
  function flagParam(flag) {
    return form.flags && Object.hasOwn(form.flags, flag) ? form.flags[flag] : null;
  }

  function paramWords(text) {
    if (!text) return text;
    return String(text)
      .replace(/\b(\w+) \((--[a-z][a-z0-9-]*)\)/g, (all, name, flag) => (flagParam(flag) === name ? name : all))
      .replace(FLAG, (all, before, flag) => before + (flagParam(flag) || flag));
  }

  // narrow_hint.option ("--namespace ops") as a query parameter: "namespace=ops".
  function narrowOption(narrow) {
    const param = flagParam(String(narrow.option).split(" ")[0]);
    return param ? param + "=" + narrow.value : paramWords(narrow.option);
  }

  // A stored moment as stored: a date alone ("2024-03-14"), else its UTC date and time
  // ("2024-03-15T04:30:00Z" -> "2024-03-15 04:30 UTC"; seconds unless :00).  Never a
  // date cut from a UTC moment: 23:30 at -05:00 is the next day in UTC.
  function moment(text) {
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?(?:\.\d+)?(?:Z|[+-]00:?00)$/.exec(text);
    if (!m) return text;
    return m[1] + " " + m[2] + (m[3] && m[3] !== ":00" ? m[3] : "") + " UTC";
  }

  // --- errors -------------------------------------------------------------------------------
  function showError(err) {
    const box = $("error");
    const isJsError = err instanceof Error;
    $("error-type").textContent = isJsError ? err.name : (err.type || "Error");
    $("error-message").textContent = showControls(isJsError ? err.message : (err.error || "request failed"));
    $("error-hint").textContent = showControls(isJsError ? "" : (err.hint || ""));
    box.hidden = false;
  }

  function clearError() {
    $("error").hidden = true;
  }

  // --- the API --------------------------------------------------------------------------------
  async function call(method, path, body) {
    if (!token) throw { type: "Unauthorized", error: "no token for this tab", hint: "open the URL `memo web` printed" };
    const headers = { Authorization: "Bearer " + token };
    const init = { method, headers, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (e) {
      throw { type: "NetworkError", error: "could not reach the memo server", hint: "is `memo web` still running?" };
    }
    let doc = null;
    try {
      doc = await resp.json();
    } catch (e) {
      doc = null;
    }
    if (!resp.ok) {
      if (resp.status === 401) forgetToken();
      throw Object.assign({ type: "HTTP " + resp.status, error: resp.statusText, hint: "" }, doc || {});
    }
    return doc;
  }

  // --- token ----------------------------------------------------------------------------------
  function takeToken() {
    const match = /(?:^|&)token=([^&]+)/.exec(location.hash.slice(1));
    if (match) {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
      history.replaceState(null, "", location.pathname + location.search);
    }
    return sessionStorage.getItem(TOKEN_KEY);
  }

  function forgetToken() {
    token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    $("token-form").hidden = false;
  }

  // --- search ---------------------------------------------------------------------------------
  // The page's own address holds the search as query parameters (a link to a search can be
  // shared or bookmarked): q, mode, profile, namespace, kind, limit, explain.  The form is
  // the one source of truth: an address fills the form, the form writes the address.  The
  // token never goes there: it stays in the fragment until takeToken moves it to sessionStorage.
  const FORM_FIELDS = ["q", "mode", "profile", "namespace", "kind", "limit"];
  const PAGE_PARAMS = [...FORM_FIELDS, "explain"];

  // The form's search as page parameters (empty fields left out; mode always written).
  function formParams() {
    const params = new URLSearchParams();
    for (const key of FORM_FIELDS) {
      const value = key === "q" ? $(key).value : $(key).value.trim();
      if (value || key === "q") params.set(key, value);
    }
    if ($("explain").checked) params.set("explain", "1");
    return params;
  }

  function badAddress(message) {
    return { type: "ValidationError", error: message + " in the page address",
             hint: "the address takes q, mode, profile, namespace, kind, limit and explain=1 (docs/web.md, The page)" };
  }

  // Fill the form from the address.  True when it holds a search (q) to run.  A value the
  // form cannot hold is refused rather than dropped: a shared link never runs a wider
  // search than it says.
  function formFromAddress() {
    const params = new URLSearchParams(location.search);
    for (const key of new Set(params.keys())) {
      if (!PAGE_PARAMS.includes(key)) throw badAddress("unknown parameter '" + key + "'");
      if (params.getAll(key).length > 1) throw badAddress("parameter '" + key + "' given more than once");
    }
    for (const id of ["mode", "profile", "kind"]) {
      let value = params.get(id) || (id === "mode" ? "auto" : "");
      const select = $(id);
      if (value === select.dataset.default) value = "";   // the server's default profile, by name
      if (![...select.options].some((o) => o.value === value)) {
        // each choice as the form shows it ("any" for kind's empty one)
        throw badAddress(id + " '" + value + "' is not one of " + [...select.options].map((o) => o.value || o.textContent).join(", "));
      }
      select.value = value;
    }
    const limit = params.get("limit") || "";
    if (limit && !/^[1-9][0-9]*$/.test(limit)) throw badAddress("limit '" + limit + "' is not a whole number from 1");
    const explain = params.get("explain");
    const said = explain === null ? "" : explain.toLowerCase();
    if (explain !== null && !form.explain.true.includes(said) && !form.explain.false.includes(said)) {
      throw badAddress("explain '" + explain + "' is not one of " + [...form.explain.true, ...form.explain.false].join(", "));
    }
    $("q").value = params.get("q") || "";
    $("namespace").value = params.get("namespace") || "";
    $("limit").value = limit;
    $("explain").checked = form.explain.true.includes(said);
    limitBounds();
    return params.has("q");
  }

  // The limit field's bounds: the selected profile's limit keys (GET /api/form).
  function limitBounds() {
    const bounds = form.limits[$("profile").value || $("profile").dataset.default];
    const input = $("limit");
    if (bounds) {
      input.max = bounds.max;
      input.placeholder = String(bounds.default);
    } else {
      input.removeAttribute("max");
      input.placeholder = "";
    }
  }

  // "push": a new history entry for a search the user asked for; "replace": the address
  // already says it (page load, back/forward).  Never a fragment: never the token.
  function writeAddress(how, params) {
    const url = location.pathname + "?" + params.toString();
    if (url === location.pathname + location.search) return;
    if (how === "push") history.pushState(null, "", url);
    else history.replaceState(null, "", url);
  }

  // The explain toggle changes only that parameter of the shown search's address (the form
  // may hold an edited query not searched yet).
  function writeExplain() {
    const params = new URLSearchParams(location.search);
    if (!params.has("q")) return;
    if ($("explain").checked) params.set("explain", "1");
    else params.delete("explain");
    writeAddress("replace", params);
  }

  // Shown results always belong to the search in the address: while a new one runs they
  // are marked stale, and a search that fails (API error, server gone) clears them.
  function clearResults() {
    ++searchSeq;
    lastSearch = null;
    render();
  }

  function setBusy(busy) {
    $("busy").hidden = !busy;
    $("results-panel").classList.toggle("stale", busy);
    $("results-panel").setAttribute("aria-busy", busy ? "true" : "false");
  }

  async function runSearch(how = "push") {
    clearError();
    writeAddress(how, formParams());
    const params = formParams();
    // The page always asks for explain: `why` carries the dates shown in every row, and the
    // toggle then shows or hides the details without a second request.
    params.set("explain", "1");
    const seq = ++searchSeq;
    setBusy(true);
    let doc;
    try {
      doc = await call("GET", "/api/search?" + params.toString());
    } catch (err) {
      if (seq === searchSeq) {
        setBusy(false);
        clearResults();
      }
      throw err;
    }
    if (seq !== searchSeq) return;     // a newer search runs: it renders (and ends "busy")
    setBusy(false);
    lastSearch = doc;
    render();
    // Other processes write too: the header counts follow every search (and /api/stats
    // lets the server notice vectors they left queued).
    loadStats().catch(() => {});
  }

  // Run the search the address holds (page load, back/forward); none: an empty page.
  async function searchFromAddress() {
    let search;
    try {
      search = formFromAddress();
    } catch (err) {
      clearResults();      // the results shown are not this address's
      throw err;
    }
    if (search) {
      await runSearch("replace");
    } else {
      clearResults();
      clearError();
    }
  }

  // "show more": the shown search (the address, not an edited form) with its limit raised
  // to take the results the limit dropped, within the profile's limit.max.
  function showMore(limit) {
    formFromAddress();
    $("limit").value = String(limit);
    return runSearch("push");
  }

  function render() {
    const doc = lastSearch;
    const list = $("results");
    const summary = $("summary");
    list.replaceChildren();
    summary.replaceChildren();
    const explain = $("explain").checked;
    if (!doc) {
      renderTrace(null, explain);
      return;
    }
    const shown = doc.results.length;
    const count = doc.truncated ? shown + " of " + (shown + doc.truncated) + " shown"
      : shown + " result" + (shown === 1 ? "" : "s");
    summary.append(el("span", "count", count));
    const more = moreLimit(doc);
    if (more) {
      const button = el("button", "link more", "show " + (more - doc.trace.limit) + " more");
      button.type = "button";
      button.id = "more";
      button.addEventListener("click", () => showMore(more).catch(showError));
      summary.append(el("span", null, " · "), button);
    } else if (doc.truncated && doc.narrow_hint) {
      summary.append(el("span", "narrow", " · narrow with " + showControls(narrowOption(doc.narrow_hint)) +
        " (drops " + doc.narrow_hint.would_drop + ")"));
    }
    if (doc.abstained || shown === 0) {
      summary.append(el("span", "reason", " · " + showControls(doc.reason || "nothing relevant stored")));
      if (doc.hint) summary.append(el("span", "hint", " · " + showControls(paramWords(doc.hint))));
    }
    for (const note of (doc.trace && doc.trace.notes) || []) summary.append(el("span", "note warn", " · " + showControls(note)));
    if (doc.trace && doc.trace.degraded && doc.trace.degraded.flag) {
      summary.append(el("span", "warn", " · degraded: " + showControls(doc.trace.degraded.reason)));
    }
    doc.results.forEach((res, i) => list.append(resultItem(res, i + 1, explain)));
    renderTrace(doc, explain);
  }

  // The limit that would show the results the limit dropped (drops of stage "limit"),
  // capped at the profile's limit.max; null when nothing more can be shown that way.
  function moreLimit(doc) {
    const tr = doc.trace;
    if (!doc.truncated || !tr || typeof tr.limit !== "number") return null;
    const dropped = (tr.drops || []).filter((d) => d.stage === "limit").reduce((n, d) => n + d.count, 0);
    const bounds = form.limits[tr.profile];
    const next = Math.min(tr.limit + dropped, bounds ? bounds.max : Infinity);
    return next > tr.limit ? next : null;
  }

  function resultItem(res, rank, explain) {
    const item = el("li", "result");
    item.dataset.recordId = res.record_id;
    item.dataset.passageId = res.passage_id;
    const head = el("div", "head");
    head.append(el("span", "rank", "#" + rank), labelled("score", num("score", res.score, "score")));
    head.append(el("span", "band band-" + (res.band || "none"), res.band || "no band"));
    if (res.relevance !== null && res.relevance !== undefined) head.append(labelled("relevance", num("relevance", res.relevance)));
    if (res.section) head.append(el("span", "section", res.section));
    const meta = el("span", "meta");
    meta.append(el("span", "kind", res.kind), el("span", null, " / "), el("span", "namespace", res.namespace));
    const lib = [res.library, res.version].filter(Boolean).join(" ");
    if (lib) meta.append(el("span", null, " · "), el("span", "library", lib));
    head.append(meta);
    // The event date comes with every result; when it was recorded, with why only.
    const when = res.event_at || (res.why ? (res.why.freshness.event_at || res.why.provenance.recorded_at) : null);
    if (when) {
      const date = el("span", "date", moment(when));
      date.title = when;
      head.append(date);
    }
    item.append(head);
    const text = res.text.split(/\s+/).join(" ").trim();
    item.append(el("div", "text", text.length > SNIPPET_CHARS ? text.slice(0, SNIPPET_CHARS) + "…" : text));
    const open = el("button", "record-id link", res.record_id);
    open.type = "button";
    open.title = "show the whole record";
    // Named by what the result says, not only its id (a list of bare ids is no help to a
    // screen reader user); the visible id stays part of the name.
    const about = (res.section ? res.section + ": " : "") + text;
    open.setAttribute("aria-label", "record " + res.record_id + ": " + (about.length > 120 ? about.slice(0, 120) + "…" : about));
    open.addEventListener("click", () => showRecord(res.record_id, open).catch(showError));
    item.append(open);
    const chips = res.why ? entityChips(res.why) : null;
    if (chips) item.append(chips);
    if (explain && res.why) item.append(whyBlock(res.why));
    return item;
  }

  // Entity chips: the query's entities this result was found by (entity arm: it names
  // them; graph arm: its walks reached it from them), from why.arms.entity / graph votes.
  function entityChips(why) {
    const seen = new Map();
    for (const arm of ["entity", "graph"]) {
      const votes = why.arms[arm] && why.arms[arm].votes;
      for (const v of votes || []) {
        const chip = seen.get(v.entity) || el("span", "chip entity-chip", v.name);
        chip.dataset.entity = v.entity;
        chip.dataset.arms = chip.dataset.arms ? chip.dataset.arms + " " + arm : arm;
        chip.title = (chip.title ? chip.title + "; " : "") +
          (arm === "entity" ? "named here (idf " + fmt(v.idf) + ")" : "graph walk from it, mass " + fmt(v.mass));
        seen.set(v.entity, chip);
      }
    }
    if (!seen.size) return null;
    const row = el("div", "entities");
    for (const chip of seen.values()) row.append(chip);
    return row;
  }

  // The facts that voted for a result (fact arm): id, text, their rank and raw scores.
  function factsBlock(votes) {
    const box = el("div", "why-facts");
    box.append(el("div", "muted", "facts behind this result"));
    const list = el("ul");
    for (const v of votes) {
      const item = el("li", "why-fact");
      item.dataset.fact = v.fact_id;
      item.append(el("code", null, v.fact_id), el("span", null, " " + v.text + " "),
        labelled("rank", num("fact_rank", v.rank)), labelled("score", num("fact_score", v.score)));
      if (v.keyword_rank !== null) item.append(labelled("keyword", num("keyword_raw", v.keyword_raw)));
      if (v.semantic_rank !== null) item.append(labelled("meaning", num("semantic_raw", v.semantic_raw)));
      list.append(item);
    }
    box.append(list);
    return box;
  }

  function whyBlock(why) {
    const box = el("div", "why");
    const table = el("table", "why-arms");
    const head = el("tr");
    for (const h of ["arm", "rank", "raw", "contribution"]) head.append(el("th", null, h));
    table.append(head);
    for (const [arm, a] of Object.entries(why.arms)) {
      const row = el("tr", "why-arm");
      row.dataset.arm = arm;
      row.append(el("td", null, arm));
      for (const key of ["rank", "raw", "contribution"]) {
        const cell = el("td");
        cell.append(num(key, a[key]));
        row.append(cell);
      }
      table.append(row);
    }
    box.append(table);
    const votes = why.arms.fact && why.arms.fact.votes;
    if (votes && votes.length) box.append(factsBlock(votes));
    const line = el("div", "why-total");
    line.append(labelled("fused", num("fused", why.fused)));
    // Stage 4's factors, in the order applied (memo/retrieve/rescore.py): recency and each
    // extra that changed this score.  data-field "factor:<name>" carries the API's number.
    for (const f of why.factors || []) {
      const name = f.label ? f.name + " " + f.label : f.name;
      line.append(el("span", null, " × "), labelled(name, num("factor:" + f.name, f.value)));
    }
    line.append(el("span", null, " = "),
      labelled("final", num("final", why.final)), labelled("band", el("span", null, why.band || "none")));
    box.append(line);
    const prov = Object.entries(why.provenance).filter(([, v]) => v !== null && v !== "");
    const from = el("div", "why-prov muted");
    from.append(el("span", null, "from: "));
    prov.forEach(([k, v], i) => {      // each value in its own (isolated) span
      if (i) from.append(el("span", null, ", "));
      from.append(el("span", "k", k + " "), el("span", "prov-" + k, v));
    });
    box.append(from);
    return box;
  }

  function renderTrace(doc, explain) {
    const box = $("trace");
    box.replaceChildren();
    box.hidden = !explain || !doc || !doc.trace;
    if (box.hidden) return;
    const tr = doc.trace;
    box.append(el("h2", null, "Trace"));
    const top = el("div", "row");
    top.append(labelled("profile", el("span", null, tr.profile)), labelled("fusion", el("span", null, tr.fusion)),
      labelled("mode", el("span", null, tr.mode)), labelled("model", el("span", null, tr.model_id || "none")),
      labelled("latency ms", num("latency_ms", tr.latency_ms)));
    box.append(top);

    // Stage 3's weights for this query (trace.fusion_weights): the profile's, or moved by
    // the extras adaptive and code_queries, with the measures that moved them.
    const fw = tr.fusion_weights || {};
    const weights = fw.weights || {}, multipliers = fw.multipliers || {};
    const arms = el("table", "trace-arms");
    const head = el("tr");
    for (const h of ["arm", "ran", "reason", "candidates", "latency ms", "weight"]) head.append(el("th", null, h));
    arms.append(head);
    for (const a of tr.arms) {
      const row = el("tr", "trace-arm" + (a.ran ? "" : " muted"));
      row.dataset.arm = a.name;
      row.append(el("td", null, a.name), el("td", null, a.ran ? "yes" : "no"), el("td", null, showControls(a.reason)));
      for (const [key, value] of [["candidates", a.candidates], ["latency_ms", a.latency_ms]]) {
        const cell = el("td");
        cell.append(num(key, value));
        row.append(cell);
      }
      const wcell = el("td");
      if (a.name in weights) {
        wcell.append(num("weight", weights[a.name]));
        if (a.name in multipliers) wcell.append(el("span", "muted", " (× "), num("multiplier", multipliers[a.name]),
          el("span", "muted", ")"));
      }
      row.append(wcell);
      arms.append(row);
    }
    box.append(arms);
    const evidence = Object.entries(fw.evidence || {});
    if (evidence.length) {
      const said = el("div", "row fusion-evidence");
      said.append(el("span", "muted", "weights set by: "));
      for (const [key, value] of evidence) said.append(labelled(key, num("evidence:" + key, value)));
      box.append(said);
    }

    const facts = el("div", "row trace-facts");
    const filter = tr.filter || {};
    facts.append(labelled("in scope", el("span", null, filter.in_scope + " / " + filter.total + " passages")),
      labelled("candidates", num("candidates", tr.candidates)),
      labelled("cutoff", el("span", "cutoff-kind", tr.cutoff_kind)),
      labelled("budget", el("span", "budget", tr.budget.used + " / " + tr.budget.max + " tokens")),
      labelled("truncated", num("truncated", doc.truncated)),
      labelled("degraded", el("span", "degraded", tr.degraded.flag ? "yes: " + showControls(tr.degraded.reason) : "no")));
    if (doc.narrow_hint) {
      facts.append(labelled("narrow with", el("span", "narrow-hint",
        showControls(narrowOption(doc.narrow_hint)) + " (drops " + doc.narrow_hint.would_drop + ")")));
    }
    for (const note of tr.notes || []) facts.append(labelled("note", el("span", "trace-note", showControls(note))));
    box.append(facts);

    const drops = el("ul", "drops");
    for (const d of tr.drops || []) {
      const item = el("li", "drop");
      item.dataset.stage = d.stage;
      item.append(el("span", "stage", d.stage + ": "), el("span", null, d.reason + " "), labelled("count", num("count", d.count)));
      drops.append(item);
    }
    if (!drops.children.length) drops.append(el("li", "muted", "no drops"));
    box.append(el("h3", null, "Drops by stage"), drops);
  }

  // --- one record -----------------------------------------------------------------------------
  // Every field of the record document (memo get --json) in its order, empty ones (null,
  // "", [], {}) left out; body below; passages counted; facts listed by id and text.
  const RECORD_APART = new Set(["body", "passages", "facts"]);

  function fieldText(value) {
    if (value === null || value === undefined || value === "") return null;
    if (Array.isArray(value)) return value.length ? value.join(", ") : null;
    if (typeof value === "object") return Object.keys(value).length ? JSON.stringify(value) : null;
    return String(value);
  }

  async function showRecord(id, opener) {
    clearError();
    const rec = await call("GET", "/api/records/" + encodeURIComponent(id));
    const fields = $("record-fields");
    fields.replaceChildren();
    for (const [key, value] of Object.entries(rec)) {
      const text = RECORD_APART.has(key) ? null : fieldText(value);
      if (text !== null) fields.append(el("dt", null, key), el("dd", "field-" + key, text));
    }
    fields.append(el("dt", null, "passages"), el("dd", "field-passages", (rec.passages || []).length));
    if (rec.facts && rec.facts.length) {
      const facts = el("dd", "field-facts");
      for (const f of rec.facts) {
        const line = el("div", "record-fact");
        line.dataset.fact = f.id;
        line.append(el("code", null, f.id), el("span", null, " " + f.text));
        facts.append(line);
      }
      fields.append(el("dt", null, "facts"), facts);
    }
    $("record-body").textContent = rec.body;
    $("record").hidden = false;
    recordOpener = opener ? { node: opener, id } : null;
    $("record-title").focus({ preventScroll: true });   // a screen reader lands on the record
    $("record").scrollIntoView({ block: "nearest" });
  }

  // Closing the record view returns focus to the result that opened it (re-rendered since:
  // the same record's button), else to the query box, never to <body>.
  function closeRecord() {
    $("record").hidden = true;
    const opener = recordOpener;
    recordOpener = null;
    let target = opener && opener.node.isConnected ? opener.node : null;
    if (!target && opener) {
      target = [...document.querySelectorAll("#results .result")]
        .find((item) => item.dataset.recordId === opener.id)?.querySelector(".record-id") || null;
    }
    (target || $("q")).focus();
  }

  // --- add ------------------------------------------------------------------------------------
  async function addMemory() {
    clearError();
    const tags = $("add-tags").value.split(",").map((t) => t.trim()).filter(Boolean);
    const body = { text: $("add-text").value, kind: $("add-kind").value, tags };
    const namespace = $("add-namespace").value.trim();
    if (namespace) body.namespace = namespace;
    const status = $("add-status");
    status.textContent = "adding…";
    delete status.dataset.recordId;
    let rep;
    try {
      rep = await call("POST", "/api/memories", body);
    } catch (err) {
      status.textContent = "not added";
      throw err;
    }
    status.textContent = rep.status + " " + rep.record_id + (rep.status === "skipped" ? " (same text already stored)" : ", " + rep.passages + " passage(s)");
    const note = rep.status === "skipped" ? null : vectorsNote(rep.vectors);
    if (note) status.append(el("span", "vectors-note" + (note.late ? " warn" : ""), "; " + showControls(note.text)));
    status.dataset.recordId = rep.record_id;
    if (rep.status !== "skipped") $("add-text").value = "";
    loadStats().catch(() => {});
  }

  // What the add report's `vectors` means for finding the memory by meaning ({text, late}):
  // an error, or no model to embed with (model_id null), means it cannot be until
  // something embeds it (late); queued with a model: the server's embedder does it now.
  function vectorsNote(v) {
    if (!v || !v.queued) return null;
    if (v.error) return { late: true, text: "it cannot be found by meaning yet: " + v.error };
    if (v.model_id === null) {
      return { late: true, text: "it cannot be found by meaning yet: no embedding model could be named to " +
        "embed it (`memo models check` says why); keyword search finds it now" };
    }
    return { late: false, text: "embedding in the background: keyword search finds it now, by meaning in moments" };
  }

  // --- start ----------------------------------------------------------------------------------
  async function loadStats() {
    const s = await call("GET", "/api/stats");
    $("status").textContent = s.live + " live records, " + s.passages + " passages";
  }

  async function loadForm() {
    form = await call("GET", "/api/form");
  }

  async function loadProfiles() {
    const doc = await call("GET", "/api/profiles");
    const select = $("profile");
    select.dataset.default = doc.default;
    select.replaceChildren(el("option", null, doc.default + " (default)"));
    select.options[0].value = "";   // "" = the server's default: no profile parameter sent
    for (const name of doc.profiles) {
      if (name === doc.default) continue;
      const option = el("option", null, name);
      option.value = name;
      select.append(option);
    }
  }

  // Stats and profiles, then the search the address holds (the profile list must be
  // there before the address can pick one).
  async function loadAll() {
    await Promise.all([loadStats(), loadProfiles(), loadForm()]);
    limitBounds();
    try {
      await searchFromAddress();
    } finally {
      document.body.dataset.ready = "1";
    }
  }

  function on(formId, action) {
    $(formId).addEventListener("submit", (event) => {
      event.preventDefault();
      action().catch(showError);
    });
  }

  function start() {
    token = takeToken();
    on("search-form", () => runSearch("push"));
    on("add-form", addMemory);
    on("token-form", async () => {
      token = $("token-input").value.trim();
      sessionStorage.setItem(TOKEN_KEY, token);
      $("token-input").value = "";
      $("token-form").hidden = true;
      await loadAll();
    });
    $("explain").addEventListener("change", () => {
      if (lastSearch) writeExplain();
      render();
    });
    window.addEventListener("popstate", () => { if (token) searchFromAddress().catch(showError); });
    $("profile").addEventListener("change", limitBounds);
    $("record-close").addEventListener("click", closeRecord);
    if (!token) {
      $("token-form").hidden = false;
      return;
    }
    loadAll().catch(showError);
  }

  start();
})();
