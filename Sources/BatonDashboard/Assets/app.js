// Baton's dashboard: one button per action, live from batond's transitions.
// Every text from batond goes into the page with textContent, never as HTML.
"use strict";

const TERMINAL = new Set(["success", "failure", "cancelled"]);
const state = {
  actions: new Map(),   // name -> ActionInfo (policy, params, allowed, ...)
  runs: new Map(),      // id -> run, every run the page knows (live and recent)
  runLinks: new Set(),  // ids of the runs the run page shows needs of, or needed by
  cards: new Map(),     // name -> the card's elements
  presses: new Map(),   // run id -> action name, for runs pressed from this page
  history: [],          // the history table's runs, newest first
  storeProblem: null,
  view: location.pathname.startsWith("/runs/") ? "run" : location.pathname.startsWith("/actions/") ? "action" : "actions",
  runID: Number(location.pathname.split("/")[2] || 0),
  actionName: location.pathname.startsWith("/actions/") ? decodeURIComponent(location.pathname.slice("/actions/".length)) : null,
};

const $ = (selector, root = document) => root.querySelector(selector);
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("data-") || key.startsWith("aria-") || key === "for" || key === "role") node.setAttribute(key, value);
    else node[key] = value;
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// ---- words, as the CLI says them -------------------------------------------------------------

function duration(micros) {
  if (micros < 0) return "-" + duration(-micros);
  if (micros < 1000) return `${Math.round(micros)}µs`;
  if (micros < 1e6) return `${Math.floor(micros / 1000)}ms`;
  if (micros < 1e7) return `${(Math.round(micros / 1e5) / 10).toFixed(1)}s`;
  const s = Math.round(micros / 1e6);
  const two = (n) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${two(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${two(Math.floor(s % 3600 / 60))}m`;
  return `${Math.floor(s / 86400)}d${two(Math.floor(s % 86400 / 3600))}h`;
}
const nowMicros = () => Date.now() * 1000;
const ago = (micros) => duration(nowMicros() - micros) + " ago";
const localTime = (micros) => new Date(micros / 1000).toLocaleString();
function took(run) {
  if (!run.startedAt) return "-";
  return duration((run.endedAt || nowMicros()) - run.startedAt);
}
function userName(uid, users) { return users && users[uid] ? `${users[uid]} (uid ${uid})` : `uid ${uid}`; }
// The uid batond serves the team dashboard's group principals as (Peer.groupPrincipalUID): no
// one's; such a peer is named by its `via` (carol@example.org via group:ops) where there is one.
const GROUP_PRINCIPAL_UID = 4294967294;
function peerName(peer, via, users) {
  return peer.uid === GROUP_PRINCIPAL_UID && via ? via : userName(peer.uid, users);
}

function outcome(run) {
  const name = `run ${run.id}`;
  switch (run.phase) {
    case "success": return { tone: "ok", text: `✓ ${name} succeeded in ${took(run)}` };
    case "failure": return { tone: "bad", text: `✗ ${name} failed after ${took(run)}: ${run.error || run.reason || "no error recorded"}` };
    case "cancelled": {
      let why = run.cancelledBy != null ? `cancelled by uid ${run.cancelledBy}` : (run.reason === "replaced" ? (run.error || "replaced") : "cancelled");
      if (run.reason && !["cancelled", "replaced"].includes(run.reason) && run.cancelledBy == null) why += `: ${run.error || run.reason}`;
      return { tone: "warn", text: `⊘ ${name} ${why}` };
    }
    default: return { tone: "", text: `${name} is ${run.phase}` };
  }
}

function notes(detail) {
  const out = [];
  if (!detail) return out;
  if (detail.reason) out.push(detail.reason);
  if (detail.attempt) out.push(`attempt ${detail.attempt}`);
  if (detail.exitCode != null) out.push(`exit ${detail.exitCode}`);
  if (detail.signal != null) out.push(`signal ${detail.signal}`);
  if (detail.by != null) out.push(`by uid ${detail.by}`);
  if (detail.backoff != null) out.push(`retry in ${duration(detail.backoff)}`);
  if (detail.leftovers != null) out.push(`${detail.leftovers} leftover process${detail.leftovers === 1 ? "" : "es"}`);
  if (detail.cpuUser != null) out.push(`cpu ${duration(detail.cpuUser)} user, ${duration(detail.cpuSystem || 0)} system`);
  if (detail.memoryPeak != null) out.push(`peak memory ${(detail.memoryPeak / 1048576).toFixed(1)} MiB`);
  if (detail.error) out.push(detail.error);
  return out;
}

// ---- signing in -----------------------------------------------------------------------------

// The session lives in this origin's storage (scheme, host and port): no request the browser makes
// to another port or host carries it, as a cookie for 127.0.0.1 would. It goes only in the
// Authorization field of the page's own requests. A one-time code in the address (#code=…, which
// the browser never sends anywhere) is traded for it once, and leaves the address bar at once.
const SESSION = "baton-dashboard-session";
let session = localStorage.getItem(SESSION);

function takeCode() {
  const match = /^#code=([0-9a-f]{1,128})$/.exec(location.hash);
  if (location.hash) history.replaceState(null, "", location.pathname + location.search);
  return match ? match[1] : null;
}

async function signIn() {
  const code = takeCode();
  if (session) {
    let answer = null;
    try { answer = await fetch("/api/status", { method: "HEAD", headers: authorization() }); } catch (error) { /* below */ }
    if (answer && answer.ok) return true;
  }
  if (!code) {
    // A team's dashboard behind its sign-in proxy: the proxy signed this page in, and the
    // dashboard ignores the session it is sent (any will do; the loops below run while one is set).
    let probe = null;
    try { probe = await fetch("/api/status", { method: "HEAD" }); } catch (error) { /* below */ }
    if (probe && probe.ok) { session = "proxy"; return true; }
    signedOut();
    return false;
  }
  const answer = await api("/api/session", { code }, { signingIn: true });
  if (!answer.ok) { signedOut(answer.error.message); return false; }
  session = answer.session;
  localStorage.setItem(SESSION, session);
  return true;
}

function signedOut(message) {
  session = null;
  localStorage.removeItem(SESSION);
  const status = $("#connection");
  status.dataset.state = "offline";
  status.textContent = "not signed in";
  const banner = $("#banner");
  banner.textContent = message || "This page is not signed in: open an address `baton dashboard` printed (press Enter where it runs for a new one).";
  banner.hidden = false;
}

const authorization = () => (session ? { Authorization: `Bearer ${session}` } : {});

let streaming = false;
async function start() {
  if (!(await signIn()) || streaming) return;
  streaming = true;
  $("#banner").hidden = true;
  if (state.view === "run") followOutput();
  await connect();
  streaming = false;
}

// ---- talking to the dashboard ----------------------------------------------------------------

async function api(path, body, { signingIn = false } = {}) {
  const headers = signingIn ? {} : authorization();
  const init = body === undefined ? { headers }
    : { method: "POST", headers: { ...headers, "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    return { ok: false, error: { code: "internal", message: "the dashboard does not answer (is `baton dashboard` still running?)" } };
  }
  if (response.status === 401 && !signingIn) signedOut();
  try {
    return await response.json();
  } catch (error) {
    const text = response.status === 401 ? "this page is not signed in: open an address `baton dashboard` printed" : `${response.status} ${response.statusText}`;
    return { ok: false, error: { code: "internal", message: text } };
  }
}

// The event stream, read with fetch (EventSource cannot send the Authorization field): each
// event's id resumes the stream after a drop, as Last-Event-ID.
async function connect() {
  const status = $("#connection");
  const show = (stateName, text) => { status.dataset.state = stateName; status.textContent = text; };
  const handlers = {
    snapshot: (data) => { show("live", "live"); applySnapshot(JSON.parse(data)); },
    update: (data) => { const update = JSON.parse(data); applyUpdate(update.run, update.transition); },
    progress: (data) => applyProgress(JSON.parse(data).run),
    offline: (data) => show("offline", JSON.parse(data).message),
  };
  let lastEventID = null;
  for (let delay = 500; session; delay = Math.min(delay * 2, 5000)) {
    try {
      const headers = { ...authorization(), Accept: "text/event-stream" };
      if (lastEventID) headers["Last-Event-ID"] = lastEventID;
      const response = await fetch("/events", { headers, cache: "no-store" });
      if (response.status === 401) { signedOut(); return; }
      if (!response.ok || !response.body) throw new Error(`${response.status}`);
      show("live", "live");
      delay = 500;
      lastEventID = await readEvents(response.body, handlers, lastEventID);
    } catch (error) {
      // Dropped: try again below.
    }
    if (!session) return;
    show("connecting", "reconnecting…");
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

// Reads text/event-stream (as the dashboard writes it: LF line ends) until it ends; calls the
// handler of each event; returns the last id seen.
async function readEvents(body, handlers, lastEventID) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return lastEventID;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message", id = null;
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") name = text;
        else if (field === "data") data.push(text);
        else if (field === "id") id = text;
      }
      if (id !== null) lastEventID = id;
      if (data.length && handlers[name]) handlers[name](data.join("\n"));
    }
  }
}

// ---- state -----------------------------------------------------------------------------------

function applySnapshot(status) {
  state.actions = new Map((status.actions || []).map((info) => [info.name, info]));
  state.storeProblem = status.storeProblem || null;
  for (const info of state.actions.values()) {
    for (const run of info.inFlight || []) state.runs.set(run.id, run);
    if (info.last) state.runs.set(info.last.id, info.last);
  }
  // A run the page thought live that the snapshot no longer has ended while the page was away.
  for (const [id, run] of state.runs) {
    const info = state.actions.get(run.action);
    if (!TERMINAL.has(run.phase) && !(info && (info.inFlight || []).some((live) => live.id === id))) state.runs.delete(id);
  }
  renderBanner();
  if (state.view === "actions") { renderCards(); fillActionFilter(); loadHistory(); scheduleCardCharts(); }
  else if (state.view === "action") scheduleActionPage();
  else loadRun();
}

// Updates may repeat what a snapshot already holds (the stream replays from before it): a run's
// transitions carry a seq, and an ended run never changes.
function applyUpdate(run, transition) {
  const known = state.runs.get(run.id);
  if (known && (TERMINAL.has(known.phase) || (known.seq != null && transition.seq <= known.seq))) return;
  run.seq = transition.seq;
  state.runs.set(run.id, run);
  if (state.view === "actions") {
    renderCard(run.action);
    for (const name of sharingALock(run.action)) renderCard(name);
    upsertHistory(run);
    const pressedFrom = state.presses.get(run.id);
    if (pressedFrom && TERMINAL.has(run.phase)) {
      const { tone, text } = outcome(run);
      setNote(pressedFrom, text, tone, run.id);
      state.presses.delete(run.id);
    }
    if (TERMINAL.has(run.phase)) scheduleCardCharts();
  } else if (state.view === "action") {
    if (run.action === state.actionName && TERMINAL.has(run.phase)) scheduleActionPage();
  } else if (run.id === state.runID || state.runLinks.has(run.id)) {
    // The run shown, or a run it needs or that needs it: its phase on the page moves live.
    loadRun();
  }
}

// Progress is not a transition: it only moves the bar of a run the page knows to be live.
function applyProgress(run) {
  const known = state.runs.get(run.id);
  if (!known || TERMINAL.has(known.phase)) return;
  known.progress = run.progress;
  if (state.view === "actions") renderCard(run.action);
  else if (state.view === "run" && run.id === state.runID) loadRun();
}

function liveRuns(action) {
  return [...state.runs.values()].filter((run) => run.action === action && !TERMINAL.has(run.phase)).sort((a, b) => a.id - b.id);
}
function lastRun(action) {
  let last = null;
  for (const run of state.runs.values()) if (run.action === action && TERMINAL.has(run.phase) && (!last || run.id > last.id)) last = run;
  return last;
}

function renderBanner() {
  const banner = $("#banner");
  banner.hidden = !state.storeProblem;
  banner.textContent = state.storeProblem ? `batond cannot write its history: ${state.storeProblem}. Nothing new can start.` : "";
}

// ---- the buttons -----------------------------------------------------------------------------

function renderCards() {
  const container = $("#actions");
  for (const name of state.cards.keys()) if (!state.actions.has(name)) { state.cards.get(name).root.remove(); state.cards.delete(name); }
  if (state.actions.size === 0) { container.replaceChildren(el("p", { class: "empty", text: "You may not read any action." })); return; }
  $(".empty", container)?.remove();
  for (const name of state.actions.keys()) {
    if (!state.cards.has(name)) { const card = makeCard(state.actions.get(name)); state.cards.set(name, card); container.append(card.root); }
    renderCard(name);
  }
}

function makeCard(info) {
  const root = el("article", { class: "card", "data-action": info.name, "aria-labelledby": `title-${info.name}` });
  const head = el("div", { class: "card-head" }, el("h2", { id: `title-${info.name}` }, el("a", { href: `/actions/${encodeURIComponent(info.name)}`, text: info.name })),
    el("span", { class: "policy", title: "what a press does while a run is in flight", text: info.policy }));
  root.append(head);
  const paused = el("p", { class: "paused-banner", role: "status", hidden: true });
  root.append(paused);
  if (info.description) root.append(el("p", { class: "description", text: info.description }));
  const rules = rulesText(info);
  if (rules) root.append(el("p", { class: "rules", text: rules }));
  const form = el("form", { class: "press", "data-action": info.name, noValidate: true });
  const inputs = new Map();
  for (const name of Object.keys(info.params || {}).sort()) {
    const param = info.params[name];
    const id = `param-${info.name}-${name}`;
    const input = el("input", { id, name, autocomplete: "off", spellcheck: false, "aria-describedby": `${id}-error` });
    if (param.default != null) input.placeholder = param.default;
    if (param.secret) input.type = "password";  // a secret param: not shown as typed, never shown back
    const error = el("p", { id: `${id}-error`, class: "field-error", "aria-live": "polite" });
    const hint = param.pattern ? ` (${param.pattern})` : (param.default != null ? "" : " (required)");
    form.append(el("div", { class: "field" }, el("label", { for: id, text: name + hint }), input, error));
    input.addEventListener("input", () => { input.removeAttribute("aria-invalid"); error.textContent = ""; renderCard(info.name); });
    inputs.set(name, { input, error });
  }
  let policy = null;
  if ((info.policies || []).some((p) => p !== info.policy)) {
    const id = `policy-${info.name}`;
    policy = el("select", { id, name: "policy" });
    for (const p of [info.policy, ...info.policies.filter((p) => p !== info.policy)]) policy.append(el("option", { value: p, text: p }));
    policy.addEventListener("change", () => renderCard(info.name));
    form.append(el("div", { class: "field" }, el("label", { for: id, text: "policy" }), policy));
  }
  const button = el("button", { type: "submit", class: "press-button", "data-action": info.name });
  form.append(button);
  form.addEventListener("submit", (event) => { event.preventDefault(); press(info.name); });
  const note = el("p", { class: "note", "aria-live": "polite" });
  const flights = el("ul", { class: "flights", "aria-label": `${info.name} runs in flight` });
  const last = el("p", { class: "last" });
  const cooldown = el("p", { class: "cooldown", hidden: true });
  root.append(form, note, cooldown, flights, last);
  return { root, form, inputs, policy, button, note, cooldown, paused, flights, last, pending: false };
}

function paramsOf(card) {
  const params = {};
  for (const [name, { input }] of card.inputs) if (input.value !== "") params[name] = input.value;
  return params;
}

// Whether a run of the action has the key a press with these params would make. batond escapes
// each value in the key (`kp a=x%20b%3Dy b=z`, SingleFlightKey in BatonCore), so rather than write
// the key again here, compare what makes it: the key params' names, in order, and their values
// (defaults filled in), which the run carries unescaped.
function hasKeyOf(run, info, params) {
  const keyParams = info.keyParams || [];
  const names = run.key.split(" ").slice(1).map((part) => part.split("=")[0]);
  if (names.length !== keyParams.length || names.some((name, i) => name !== keyParams[i])) return false;
  return keyParams.every((p) => (run.params || {})[p] === (params[p] ?? info.params[p]?.default ?? ""));
}

function renderCard(name) {
  const card = state.cards.get(name), info = state.actions.get(name);
  if (!card || !info) return;
  const allowed = new Set(info.allowed || []);
  const live = liveRuns(name);
  const running = drawPress(card, info, live);
  card.root.dataset.state = running ? running.phase : (lastRun(name)?.phase || "idle");
  renderFlights(card, info, live, allowed);
  const last = lastRun(name);
  card.last.replaceChildren();
  // The outcome of this page's own press is in the note; the last line would only repeat it.
  card.last.hidden = !!last && card.noteRun === last.id;
  if (last) {
    const { tone, text } = outcome(last);
    card.last.className = `last outcome-${tone}`;
    card.last.append("Last: ", el("a", { href: `/runs/${last.id}`, text }), " · ", el("span", { class: "ago", "data-at": String(last.endedAt || last.queuedAt), text: ago(last.endedAt || last.queuedAt) }));
  } else {
    card.last.hidden = live.length > 0;
    card.last.className = "last muted";
    card.last.textContent = allowed.has("trigger") ? "Never run yet." : "Never run yet. You may only watch this action.";
  }
}

// ---- what a press would do -------------------------------------------------------------------

// The button and the cooldown line, from what a press with the card's params would do; answers
// the key's run in flight, if any. Drawn again by the clock too, since a cooldown runs out.
function drawPress(card, info, live) {
  const policy = card.policy ? card.policy.value : info.policy;
  const params = paramsOf(card);
  const sameKey = live.filter((run) => hasKeyOf(run, info, params));
  const running = sameKey.find((run) => run.phase !== "queued") || sameKey[0];
  const followUp = sameKey.find((run) => run.phase === "queued" && run !== running);
  const line = sameKey.filter((run) => run.phase === "queued" && run !== running).sort((a, b) => a.id - b.id);
  const key = { running, followUp, line, params, lastSuccess: lastSuccess(info, params), lock: lockInTheWay(info), pending: card.pending, now: nowMicros() };
  const press = pressFor(info, policy, key);
  if (card.button.dataset.press !== press.kind || card.button.textContent !== press.label || card.button.disabled !== !!press.disabled || card.button.title !== (press.title || "")) {
    card.button.dataset.press = press.kind;
    card.button.title = press.title || "";
    card.button.disabled = !!press.disabled;
    card.button.setAttribute("aria-busy", press.busy ? "true" : "false");
    card.button.replaceChildren(...(press.busy ? [el("span", { class: "spinner", "aria-hidden": "true" })] : []), press.label);
  }
  const pausedText = pauseText(info.paused, key.now);
  card.paused.hidden = !pausedText;
  if (card.paused.textContent !== (pausedText || "")) card.paused.textContent = pausedText || "";
  const cooling = cooldownText(info, key.lastSuccess, key.now);
  card.cooldown.hidden = !cooling;
  if (card.cooldown.textContent !== (cooling || "")) card.cooldown.textContent = cooling || "";
  return running;
}

// What a press of an action's button would do, in the order batond decides it (permission, the
// cooldown, the policy against the key's run in flight, the locks): a pure function of plain
// values, table-tested in DashboardRulesBrowserTests; a new rule is one more case here. `key` is
// the key's live state: { running, followUp, line (the follow-ups waiting, in order), params (the
// card's), lastSuccess, lock (a wait as lockWaitText takes it),
// pending, now (µs) }. Answers { kind (what a press does, for the style), label, disabled, busy, title }.
function pressFor(info, policy, key) {
  const name = info.name;
  if (!(info.allowed || []).includes("trigger")) return { kind: "denied", label: `Run ${name}`, disabled: true, title: `you may not trigger ${name}` };
  if (key.pending) return { kind: "pending", label: "Starting…", disabled: true, busy: true };
  const paused = pauseText(info.paused, key.now);
  if (paused && info.paused.hold) return { kind: "held", label: `Queue ${name} (held)`, title: `${paused}; a press waits queued until it ends` };
  if (paused) return { kind: "paused", label: "Paused", disabled: true, title: paused };
  const left = cooldownLeft(info, key.lastSuccess, key.now);
  if (left > 0) {
    return { kind: "cooled", label: "Cooled: nothing will run",
      title: `run ${key.lastSuccess.id} succeeded ${duration(key.now - key.lastSuccess.endedAt)} ago; for ${duration(left)} more a press is answered with it (cooldown ${windowText(info.cooldown)})` };
  }
  const running = key.running, followUp = key.followUp;
  if (running) {
    switch (policy) {
      case "reject": return { kind: "busy", label: `${running.phase === "queued" ? "Queued" : "Loading"}… (run ${running.id})`, disabled: true, busy: true };
      case "join": return { kind: "join", label: `Join run ${running.id}` };
      case "queue": return queuePress(info, running, followUp, key);
      case "replace": return { kind: "replace", label: `Replace run ${running.id}` };
    }
  }
  if (key.lock) return { kind: "lock", label: `Wait for lock ${key.lock.lock}`, title: `a run would wait queued: ${lockWaitText(key.lock)}` };
  return { kind: "run", label: `Run ${name}` };
}

// How long a press of the key is still answered with its last success (µs; 0 when not at all):
// as batond decides it, from the success's end, a press exactly `cooldown` after it runs.
function cooldownLeft(info, lastSuccess, now) {
  if (!info.cooldown || !lastSuccess || !lastSuccess.endedAt) return 0;
  return Math.max(lastSuccess.endedAt + info.cooldown - now, 0);
}

// The card's cooldown line while the window is open ("cooldown: last success 2m00s ago (run 7), 8m00s left"), else null.
function cooldownText(info, lastSuccess, now) {
  const left = cooldownLeft(info, lastSuccess, now);
  if (left <= 0) return null;
  return `cooldown: last success ${duration(now - lastSuccess.endedAt)} ago (run ${lastSuccess.id}), ${duration(left)} left`;
}

// The rules around the action's runs, as the card's small print: its hooks, cooldown and locks.
function rulesText(info) {
  const parts = [];
  for (const event of ["failure", "success", "change"]) if (info.hooks && info.hooks[event]) parts.push(`on ${event}: ${info.hooks[event]}`);
  if (info.cooldown) parts.push(`cooldown ${windowText(info.cooldown)}`);
  if (info.queueDepth > 1) parts.push(`a line of ${info.queueDepth}`);
  for (const lock of info.locks || []) parts.push(`lock ${lock.name}${lock.limit > 1 ? ` (${lock.limit} at once)` : ""}`);
  return parts.join(" · ");
}

// The banner of a paused action, as batond tells its pause ("Paused by alice for 1h58m more:
// migrating db"; "Held by …" for a pause that queues its presses, `--hold`); null when it is not
// paused, or its pause has ended.
function pauseText(pause, now) {
  if (!pause || (pause.until != null && now >= pause.until)) return null;
  const until = pause.until != null ? ` for ${duration(pause.until - now)} more` : " until resumed";
  return `${pause.hold ? "Held" : "Paused"} by ${pause.by}${until}: ${pause.reason}`;
}

// A press under `queue`: with a line of one, join its follow-up or queue after the run; with a
// longer line (`queueDepth`), join the entry with the same params, else queue at its end while
// there is room; a full line refuses, as batond would (busy).
function queuePress(info, running, followUp, key) {
  const depth = info.queueDepth || 1, line = key.line || (followUp ? [followUp] : []);
  if (depth <= 1) return { kind: "queue", label: followUp ? `Join follow-up run ${followUp.id}` : `Queue after run ${running.id}` };
  // batond compares the params with their defaults filled in, as the runs carry them.
  const wanted = {};
  for (const [name, spec] of Object.entries(info.params || {})) if (spec && spec.default != null) wanted[name] = spec.default;
  Object.assign(wanted, key.params || {});
  const same = line.find((run) => sameParams(run.params || {}, wanted));
  if (same) return { kind: "queue", label: `Join run ${same.id} in line` };
  if (line.length < depth) return { kind: "queue", label: `Queue ${ordinal(line.length + 1)} in line`, title: `${line.length} of ${depth} waiting` };
  return { kind: "busy", label: `Line full (${line.length} waiting)`, disabled: true, title: `the line of ${depth} is full: a press would be refused busy` };
}

function sameParams(a, b) {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((name) => b[name] === a[name]);
}

// A window as the config says it: `10m`, `1h`, not `10m00s`.
function windowText(micros) { return duration(micros).replace(/m00s$/, "m").replace(/h00m$/, "h"); }

// The key's last success the page knows: from the snapshot (`cooling`) or seen end since.
function lastSuccess(info, params) {
  let best = null;
  const consider = (run) => { if (run.phase === "success" && hasKeyOf(run, info, params) && (!best || run.id > best.id)) best = run; };
  for (const run of info.cooling || []) consider(run);
  for (const run of state.runs.values()) if (run.action === info.name) consider(run);
  return best;
}

// The other actions holding one of this action's locks: a change to its runs changes their buttons.
function sharingALock(action) {
  const mine = new Set((state.actions.get(action)?.locks || []).map((lock) => lock.name));
  if (!mine.size) return [];
  return [...state.actions.values()].filter((info) => info.name !== action && (info.locks || []).some((lock) => mine.has(lock.name))).map((info) => info.name);
}

// The first of the action's locks a new run would wait for: all its slots held by runs the page
// knows to be live, or runs already queued for it (they go first). Null when none is in the way.
function lockInTheWay(info) {
  for (const lock of info.locks || []) {
    const holders = [], ahead = [];
    for (const run of state.runs.values()) {
      if (TERMINAL.has(run.phase)) continue;
      if (run.phase === "queued") { if (run.waiting && run.waiting.lock === lock.name) ahead.push({ run: run.id, action: run.action }); continue; }
      const claims = state.actions.get(run.action)?.locks || [];
      if (claims.some((claim) => claim.name === lock.name)) holders.push({ run: run.id, action: run.action });
    }
    if (holders.length >= lock.limit || ahead.length) return { lock: lock.name, limit: lock.limit, holders, ahead };
  }
  return null;
}

function renderFlights(card, info, live, allowed) {
  const items = live.map((run) => {
    const item = el("li", { class: "flight", "data-run": String(run.id), "data-phase": run.phase });
    const text = el("span", { class: "flight-text" });
    item.append(text);
    if (allowed.has("cancel")) {
      const cancel = el("button", { type: "button", class: "cancel", text: "Cancel", "aria-label": `Cancel run ${run.id} of ${info.name}` });
      cancel.addEventListener("click", () => cancelRun(run.id, cancel));
      item.append(cancel);
    }
    item.append(el("progress", { max: 1 }));
    drawFlight(item, run);
    return item;
  });
  card.flights.replaceChildren(...items);
}

// The loading state: spinner, phase, elapsed time, and reported progress or an estimate.
function drawFlight(item, run) {
  const text = $(".flight-text", item), bar = $("progress", item);
  const parts = [el("span", { class: "spinner", "aria-hidden": "true" }), " ", el("a", { href: `/runs/${run.id}`, text: `run ${run.id}` })];
  let words = ` ${run.phase}`;
  if (run.key !== run.action) words += ` · ${run.key.slice(run.action.length + 1)}`;
  if (run.host) words += ` · on ${run.host}`;
  if (run.via) words += ` · ${run.via}`;
  if (run.startedAt) words += ` · ${took(run)}`;
  else words += ` · for ${duration(nowMicros() - run.queuedAt)}`;
  bar.classList.remove("estimate");
  if (run.progress && run.progress.fraction != null) {
    bar.hidden = false; bar.value = run.progress.fraction;
    words += ` · ${Math.round(run.progress.fraction * 100)}%`;
  } else if (run.estimate > 0 && run.startedAt && run.phase === "loading") {
    const fraction = Math.min((nowMicros() - run.startedAt) / run.estimate, 0.99);
    bar.hidden = false; bar.value = fraction; bar.classList.add("estimate");
    words += ` · ~${Math.round(fraction * 100)}% (usually ${duration(run.estimate)})`;
  } else if (run.phase === "loading") {
    bar.hidden = false; bar.removeAttribute("value");
  } else {
    bar.hidden = true;
  }
  if (run.progress && run.progress.message) words += ` · ${run.progress.message}`;
  if (run.phase === "queued" && run.waiting) words += ` · ${waitingText(run.waiting)}`;
  const place = linePlace(run);
  if (place) words += ` · ${ordinal(place)} in line`;
  text.replaceChildren(...parts, words);
}

// A follow-up's place in its key's line (1: starts next), counted from the live runs the page
// knows: batond gives each its place (`line`) when it tells of it, and the line moves up as the
// runs before it start or end, first in first out (by id).
function linePlace(run) {
  if (run.phase !== "queued" || run.line == null) return null;
  let place = 1;
  for (const other of state.runs.values()) {
    if (other.id < run.id && other.key === run.key && other.phase === "queued" && other.line != null) place += 1;
  }
  return place;
}

function ordinal(n) {
  const tens = n % 100, ones = n % 10;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ones === 1 ? "st" : ones === 2 ? "nd" : ones === 3 ? "rd" : "th";
  return `${n}${suffix}`;
}

// What a queued run waits for, as batond said when the page last read it ("waiting for lock db,
// held by migrate run 12": its status, or the update of its queued transition); holders the page
// has seen end since are left out (a newer holder shows only at the next snapshot).
function waitingText(waiting) {
  const live = (list) => (list || []).filter((h) => { const known = state.runs.get(h.run); return !known || !TERMINAL.has(known.phase); });
  return lockWaitText({ lock: waiting.lock, limit: waiting.limit, holders: live(waiting.holders), ahead: live(waiting.ahead) });
}

// A wait for a lock in words, as the CLI says it (LockWait.text).
function lockWaitText(waiting) {
  const names = (list) => list.map((h) => `${h.action} run ${h.run}`).join(", ");
  let text = `waiting for lock ${waiting.lock}`;
  if (waiting.limit > 1) text += ` (${waiting.limit} at once)`;
  if ((waiting.holders || []).length) text += `, held by ${names(waiting.holders)}`;
  if ((waiting.ahead || []).length) text += `, behind ${names(waiting.ahead)}`;
  return text;
}

function setNote(name, text, tone, runID) {
  const card = state.cards.get(name);
  if (!card) return;
  card.note.dataset.tone = tone || "";
  card.note.replaceChildren(runID ? el("a", { href: `/runs/${runID}`, text }) : text);
  card.noteRun = runID || null;
}

async function press(name) {
  const card = state.cards.get(name), info = state.actions.get(name);
  if (!card || card.button.disabled) return;
  for (const { input, error } of card.inputs.values()) { input.removeAttribute("aria-invalid"); error.textContent = ""; }
  const body = { action: name, params: paramsOf(card) };
  if (card.policy && card.policy.value !== info.policy) body.policy = card.policy.value;
  card.pending = true;
  setNote(name, "", "");
  renderCard(name);
  const answer = await api("/api/trigger", body);
  card.pending = false;
  if (!answer.ok) {
    const message = answer.error.message;
    const match = /^param (\w+)/.exec(message);
    const field = match && card.inputs.get(match[1]);
    // A param's error goes next to its field; anything else under the button.
    if (field) { field.input.setAttribute("aria-invalid", "true"); field.error.textContent = message; field.input.focus(); }
    else setNote(name, message, "bad");
    renderCard(name);
    return;
  }
  const run = answer.run;
  const known = state.runs.get(run.id);
  if (!known || (run.seq != null && (known.seq == null || run.seq > known.seq)) && !TERMINAL.has(known.phase)) state.runs.set(run.id, run);
  const words = {
    created: `run ${run.id} started`,
    followUp: `queued run ${run.id} to start after the run in flight`,
    joined: `joined run ${run.id} (shared)`,
    coalesced: `joined the queued follow-up run ${run.id} (shared)`,
    replaced: `run ${run.id} replaced the run in flight`,
  };
  const current = state.runs.get(run.id);
  if (answer.decision === "cooled") {
    const since = current.endedAt ? ` ${ago(current.endedAt)}` : "";
    setNote(name, `✓ run ${run.id} succeeded${since}; cooldown ${windowText(answer.cooldown || info.cooldown || 0)}, nothing run`, "ok", run.id);
  } else if (TERMINAL.has(current.phase)) { const { tone, text } = outcome(current); setNote(name, text, tone, run.id); }
  else { setNote(name, words[answer.decision] || `run ${run.id}`, "", run.id); state.presses.set(run.id, name); }
  // The answer may be the first the page hears of the run's phase (the stream's update of the same
  // seq is then skipped): the cards sharing a lock with it are drawn again here too.
  renderCard(name);
  for (const other of sharingALock(name)) renderCard(other);
}

async function cancelRun(id, button) {
  button.disabled = true;
  const answer = await api("/api/cancel", { run: id });
  if (!answer.ok) {
    const run = state.runs.get(id);
    if (run) setNote(run.action, answer.error.message, "bad");
    button.disabled = false;
  }
}

// ---- approvals -------------------------------------------------------------------------------

// A run's approval, as `baton show` says it: what it waits for, or how it was decided.
function approvalText(approval, phase) {
  if (!approval.verdict) {
    // No verdict on a run that is no longer queued: it ended (cancelled, replaced) undecided.
    if (phase && phase !== "queued") return "ended before a decision";
    return `waiting for approval by ${approval.by.join(", ")}${approval.until ? ` (until ${localTime(approval.until)})` : ""}`;
  }
  if (approval.verdict === "timed_out") return "approval timed out";
  const at = approval.decidedAt ? ` at ${localTime(approval.decidedAt)}` : "";
  return `${approval.verdict} by ${approval.decidedBy || "?"}${at}${approval.reason ? `: ${approval.reason}` : ""}`;
}

// The Approve/Deny pair, with the params in full, offered only where batond lists the run as
// waiting for this user's approval (one of its approvers, not its trigger unless self: true).
async function offerApproval(run, controls) {
  const answer = await api("/api/approvals");
  if (!answer.ok || !(answer.runs || []).some((waiting) => waiting.id === run.id)) return;
  if (!controls.isConnected || controls.querySelector(".approve")) return;
  const params = Object.entries(run.params || {}).map(([name, value]) => `${name}=${value}`).join(" ");
  const box = el("div", { class: "approval", role: "group", "aria-label": `Approval of run ${run.id}` });
  const approve = el("button", { type: "button", class: "approve", text: `Approve run ${run.id}` });
  const reason = el("input", { type: "text", class: "deny-reason", placeholder: "why deny (optional)", "aria-label": `Why deny run ${run.id}` });
  const deny = el("button", { type: "button", class: "deny", text: `Deny run ${run.id}` });
  const note = el("p", { class: "approval-note", role: "status" });
  approve.addEventListener("click", () => decideRun(run, true, "", [approve, deny], note));
  deny.addEventListener("click", () => decideRun(run, false, reason.value, [approve, deny], note));
  box.append(el("p", { class: "approval-params", text: params ? `with params ${params}` : "with no params" }), approve, deny, reason, note);
  controls.append(box);
  const from = await approvalCause(run);
  if (from && box.isConnected) box.insertBefore(el("p", { class: "approval-from", text: from }), approve);
}

// What led to a hook's or a need's run, for its approver: the run that fired it (or the first
// that needs it) with its params as batond shows them (secret ones masked) and who triggered it:
// "from build run 41 with params ref=evil, by ann". Null for a run a person triggered.
async function approvalCause(run) {
  const cause = run.hook ? run.hook.run : ((run.neededBy || [])[0] || {}).run;
  if (cause == null) return null;
  const answer = await api(`/api/runs/${cause}`);
  if (!answer.ok) return null;
  const fired = answer.detail.run;
  const params = Object.entries(fired.params || {}).map(([name, value]) => `${name}=${value}`).join(" ");
  const who = fired.trigger ? `, by ${peerName(fired.trigger, fired.via, answer.users || {})}` : "";
  return `from ${fired.action} run ${fired.id} ${params ? `with params ${params}` : "with no params"}${who}`;
}

async function decideRun(run, approve, reason, buttons, note) {
  for (const button of buttons) button.disabled = true;
  const answer = await api("/api/approval", reason ? { run: run.id, approve, reason } : { run: run.id, approve });
  note.textContent = answer.ok ? (approve ? `approved: run ${run.id} is ${answer.run.phase}` : `denied: ${answer.run.error || "cancelled"}`)
    : answer.error.message;
  if (!answer.ok) for (const button of buttons) button.disabled = false;
}

// ---- history ---------------------------------------------------------------------------------

function filters() {
  const form = $("#filters");
  const values = { action: form.action.value, phase: form.phase.value, since: form.since.value, limit: Number(form.limit.value) };
  values.sinceMicros = values.since ? nowMicros() - Number(values.since) * 1e6 : null;
  values.untilMicros = form.until.value ? new Date(form.until.value).getTime() * 1000 : null;
  const param = form.param.value.trim();
  values.param = param.includes("=") ? param : "";
  return values;
}

function fillActionFilter() {
  const select = $("#filter-action");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "", text: "every action" }), ...[...state.actions.keys()].map((name) => el("option", { value: name, text: name })));
  select.value = state.actions.has(chosen) ? chosen : "";
}

let historyRequest = 0;
async function loadHistory() {
  const f = filters();
  const query = new URLSearchParams();
  if (f.action) query.append("action", f.action);
  if (f.phase) query.append("phase", f.phase);
  if (f.sinceMicros) query.append("since", String(Math.floor(f.sinceMicros)));
  if (f.untilMicros) query.append("until", String(Math.floor(f.untilMicros)));
  if (f.param) query.append("param", f.param);
  query.append("limit", String(f.limit));
  const mine = ++historyRequest;
  const answer = await api(`/api/history?${query}`);
  if (mine !== historyRequest) return;
  if (!answer.ok) { renderHistoryMessage(answer.error.message); return; }
  state.history = answer.runs || [];
  renderHistory();
}

function matches(run, f) {
  const [name, value] = f.param ? [f.param.slice(0, f.param.indexOf("=")), f.param.slice(f.param.indexOf("=") + 1)] : [null, null];
  return (!f.action || run.action === f.action) && (!f.phase || run.phase === f.phase) && (!f.sinceMicros || run.queuedAt >= f.sinceMicros)
    && (!f.untilMicros || run.queuedAt <= f.untilMicros) && (!name || (run.params || {})[name] === value);
}

function upsertHistory(run) {
  const f = filters();
  const index = state.history.findIndex((known) => known.id === run.id);
  if (index >= 0) state.history.splice(index, 1);
  if (matches(run, f)) state.history.push(run);
  state.history.sort((a, b) => b.id - a.id);
  state.history.length = Math.min(state.history.length, f.limit);
  renderHistory();
}

function renderHistoryMessage(text) {
  $("#history tbody").replaceChildren(el("tr", {}, el("td", { colSpan: 7, class: "empty", text })));
}

function renderHistory() {
  const table = $("#history");
  table.classList.toggle("with-hosts", new Set(state.history.map((run) => run.host).filter(Boolean)).size > 1);
  if (state.history.length === 0) { renderHistoryMessage("No runs match."); return; }
  table.tBodies[0].replaceChildren(...state.history.map((run) => {
    const { tone, text } = outcome(run);
    const row = el("tr", { "data-run": String(run.id) },
      el("td", {}, el("a", { href: `/runs/${run.id}`, text: String(run.id) })),
      el("td", { text: run.key }),
      el("td", {}, el("span", { class: `phase phase-${run.phase}`, text: run.phase })),
      el("td", { title: localTime(run.queuedAt) }, el("span", { class: "ago", "data-at": String(run.queuedAt), text: ago(run.queuedAt) })),
      el("td", {}, !TERMINAL.has(run.phase) && run.startedAt
        ? el("span", { class: "took", "data-start": String(run.startedAt), text: took(run) }) : took(run)),
      el("td", { class: "host-column", text: run.host || "" }),
      el("td", { class: `outcome-${tone}`, text: TERMINAL.has(run.phase) ? text.replace(/^\S+ run \d+ /, "") : "" }));
    return row;
  }));
}

// ---- search ----------------------------------------------------------------------------------

let searchRequest = 0;
async function search() {
  const text = $("#search-text").value;
  if (!text) return;
  const f = filters();
  const query = new URLSearchParams({ text });
  if (f.action) query.append("action", f.action);
  if (f.phase) query.append("phase", f.phase);
  if (f.sinceMicros) query.append("since", String(Math.floor(f.sinceMicros)));
  if (f.untilMicros) query.append("until", String(Math.floor(f.untilMicros)));
  if (f.param) query.append("param", f.param);
  const mine = ++searchRequest;
  $("#search-note").textContent = "Searching…";
  const answer = await api(`/api/search?${query}`);
  if (mine !== searchRequest) return;
  if (!answer.ok) { $("#search-note").textContent = answer.error.message; $("#search-results").replaceChildren(); return; }
  renderSearch(answer.matches || [], text);
  if (answer.searchCut) {
    $("#search-note").textContent += ` Stopped after reading the newest output, at run ${answer.searchCut.run}: `
      + "older runs' output was not read (choose an action or a time to search further back).";
  }
}

// The text with each occurrence of `needle` (case ignored) in a <mark>, as nodes (never HTML).
function marked(text, needle) {
  const nodes = [];
  const lower = text.toLowerCase(), want = needle.toLowerCase();
  let at = 0;
  for (let hit = lower.indexOf(want); want && hit >= 0 && lower.length === text.length; hit = lower.indexOf(want, at)) {
    nodes.push(text.slice(at, hit), el("mark", { text: text.slice(hit, hit + want.length) }));
    at = hit + want.length;
  }
  nodes.push(text.slice(at));
  return nodes;
}

function renderSearch(found, needle) {
  $("#search-note").textContent = found.length === 0 ? "No run's output holds it." : `${found.length} run${found.length === 1 ? "" : "s"}, newest first.`;
  $("#search-results").replaceChildren(...found.map((match) => {
    const run = match.run;
    const head = el("p", { class: "search-run" },
      el("a", { href: `/runs/${run.id}`, text: `Run ${run.id}` }), ` ${run.key} `,
      el("span", { class: `phase phase-${run.phase}`, text: run.phase }), " ",
      el("span", { class: "muted", title: localTime(run.queuedAt), text: ago(run.queuedAt) }),
      match.lineCount ? el("span", { class: "muted", text: ` · ${match.lineCount} line${match.lineCount === 1 ? "" : "s"}` }) : "",
      match.params ? el("span", { class: "muted", text: ` · in params: ${match.params.join(", ")}` }) : "");
    const lines = el("pre", { class: "search-lines" }, ...match.lines.flatMap((line) => [
      el("span", { class: "muted", text: `${line.line}: ` }), ...marked(line.text, needle), "\n"]));
    if (match.lineCount > match.lines.length) lines.append(el("span", { class: "muted", text: `… ${match.lineCount - match.lines.length} more` }));
    return el("li", { "data-run": String(run.id) }, head, match.lines.length ? lines : "");
  }));
}

// ---- a run's page ----------------------------------------------------------------------------

let runRequest = 0;
async function loadRun() {
  const mine = ++runRequest;
  const answer = await api(`/api/runs/${state.runID}`);
  if (mine !== runRequest) return;
  if (!answer.ok) { $("#run-title").textContent = `Run ${state.runID}`; $("#run-state").textContent = answer.error.message; return; }
  renderRun(answer.detail, answer.users || {});
  if (TERMINAL.has(answer.detail.run.phase)) loadArtifacts(answer.detail.run.id);
}

// The files the run kept (artifacts), once it has ended: each a download fetched with the session.
let artifactsShown = 0;
async function loadArtifacts(id) {
  if (artifactsShown === id) return;
  const answer = await api(`/api/runs/${id}/artifacts`);
  if (!answer.ok || !answer.artifacts) return;
  artifactsShown = id;
  const { files, notices } = answer.artifacts;
  $("#artifacts-title").hidden = $("#artifacts").hidden = files.length === 0 && notices.length === 0;
  $("#artifacts").replaceChildren(...files.map((file) => {
    const link = el("a", { href: artifactPath(id, file.name), text: file.name, "data-sha256": file.sha256 });
    link.addEventListener("click", (event) => downloadArtifact(event, id, file));
    return el("li", {}, link, el("span", { class: "muted", text: ` · ${bytes(file.size)} · sha256 ${file.sha256}` }));
  }), ...notices.map((notice) => el("li", { class: "muted", text: notice })));
}

const artifactPath = (id, name) => `/api/runs/${id}/artifacts/${encodeURIComponent(name)}`;
function bytes(count) {
  if (count < 1024) return `${count} B`;
  const units = ["KiB", "MiB", "GiB"];
  let value = count / 1024, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return `${value.toFixed(1)} ${units[unit]}`;
}

// Fetched with the session (a plain link would carry none) and saved from memory as `name`;
// `note` says how it went. The blob, or null when it failed (the note says why).
async function download(path, name, note) {
  let response;
  try { response = await fetch(path, { headers: authorization(), cache: "no-store" }); } catch (error) { response = null; }
  if (!response || !response.ok) {
    let message = response ? `${response.status} ${response.statusText}` : "the dashboard does not answer";
    try { message = (await response.json()).error.message; } catch (error) { /* the status says it */ }
    if (response && response.status === 401) signedOut();
    note.textContent = message;
    return null;
  }
  const blob = await response.blob();
  const url = URL.createObjectURL(blob);
  const save = el("a", { href: url, download: name });
  document.body.append(save);
  save.click();
  save.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return blob;
}

async function downloadArtifact(event, id, file) {
  event.preventDefault();
  const note = $("#artifacts-note");
  note.hidden = false;
  note.textContent = `downloading ${file.name}…`;
  const blob = await download(artifactPath(id, file.name), file.name.split("/").pop(), note);
  if (blob) note.textContent = `downloaded ${file.name}: ${blob.size} bytes`;
}

function renderRun(detail, users) {
  const run = detail.run;
  const live = state.runs.get(run.id);
  const shown = live && !TERMINAL.has(run.phase) && live.seq != null ? { ...run, ...live } : run;
  document.title = `Run ${run.id} · ${run.action} · Baton`;
  $("#run-title").textContent = `Run ${run.id}: ${run.key}`;
  const { tone, text } = outcome(shown);
  const stateLine = $("#run-state");
  stateLine.className = `run-state outcome-${tone}`;
  stateLine.textContent = TERMINAL.has(shown.phase) ? text : `${shown.phase} · ${took(shown)}`;
  const controls = $("#run-controls");
  controls.replaceChildren();
  const info = state.actions.get(run.action);
  if (!TERMINAL.has(shown.phase) && info && (info.allowed || []).includes("cancel")) {
    const cancel = el("button", { type: "button", class: "cancel", text: `Cancel run ${run.id}` });
    cancel.addEventListener("click", () => cancelRun(run.id, cancel));
    controls.append(cancel);
  }
  const approval = shown.approval || run.approval;
  if (approval && !approval.verdict && shown.phase === "queued") offerApproval(run, controls);
  const facts = [["action", run.action], ["key", run.key], ["policy", run.policy], ["phase", shown.phase]];
  if (approval) facts.push(["approval", approvalText(approval, run.phase)]);
  for (const [name, value] of Object.entries(run.params || {})) facts.push([`param ${name}`, value]);
  if (run.trigger) facts.push(["triggered by", `${peerName(run.trigger, run.via, users)}, pid ${run.trigger.pid}`]);
  else if (run.via) facts.push(["triggered by", run.via]);
  facts.push(["queued", localTime(run.queuedAt)]);
  if (run.startedAt) facts.push(["started", localTime(run.startedAt)]);
  if (run.endedAt) facts.push(["ended", localTime(run.endedAt)]);
  facts.push(["took", took(shown)], ["attempts", String(run.attempts)]);
  if (run.exitCode != null) facts.push(["exit status", String(run.exitCode)]);
  if (run.host) facts.push(["host", run.host]);
  $("#run-facts").replaceChildren(...facts.flatMap(([name, value]) => [el("dt", { text: name }), el("dd", { text: value })]));
  $("#timeline").replaceChildren(...detail.transitions.map((t) => {
    const extra = notes(t.detail).map((note) => note.replace(/^by uid (\d+)$/, (_, uid) => `by ${userName(Number(uid), users)}`));
    return el("li", { "data-phase": t.to }, el("time", { text: localTime(t.at) }),
      el("span", { class: `phase phase-${t.to}`, text: `${t.from || "new"} → ${t.to}` }), extra.length ? ` (${extra.join("; ")})` : "");
  }));
  // The press that created the run, then every later one recorded against it (joined, rejected, …).
  const who = (t) => t.peer ? `${peerName(t.peer, t.via, users)} (pid ${t.peer.pid})` : t.via || "batond";
  const presses = [{ at: run.queuedAt, peer: run.trigger, via: run.via, decision: "created", policy: run.policy }, ...(detail.triggers || [])];
  $("#triggers").replaceChildren(...presses.map((t) =>
    el("li", { text: `${localTime(t.at)}: ${who(t)} — ${DECIDED[t.decision] || t.decision}${t.policy ? `, policy ${t.policy}` : ""}` })));
  // The runs its end's hooks made ("failure → page-oncall run 8, success"), as `baton show` lists them.
  const hooks = detail.hookRuns || [];
  $("#hooks-title").hidden = $("#hooks").hidden = hooks.length === 0;
  $("#hooks").replaceChildren(...hooks.map((hook) => el("li", {}, `${hook.hook ? hook.hook.event : "?"} → `,
    el("a", { href: `/runs/${hook.id}`, text: `${hook.action} run ${hook.id}` }), `, ${hook.phase}`)));
  renderNeeds(run, shown);
  // The output is followed on its own stream (followOutput), not redrawn with the run.
}

// The runs it needs and the runs that need it (`needs`), each a link with its phase, as `baton
// show` lists them; a run still waiting says for which. An update of any of them redraws the page.
function renderNeeds(run, shown) {
  state.runLinks = new Set([...(run.needs || []), ...(run.neededBy || [])].map((need) => need.run));
  const item = (need) => {
    const phase = (state.runs.get(need.run) || need).phase;
    return el("li", { "data-run": String(need.run) }, el("a", { href: `/runs/${need.run}`, text: `${need.action} run ${need.run}` }), " ",
      el("span", { class: `phase phase-${phase}`, text: phase }));
  };
  for (const [id, list] of [["needs", run.needs || []], ["needed-by", run.neededBy || []]]) {
    $(`#${id}-title`).hidden = $(`#${id}`).hidden = list.length === 0;
    $(`#${id}`).replaceChildren(...list.map(item));
  }
  drawNeedsGraph(run, shown);
  const pending = (run.needs || []).filter((need) => (state.runs.get(need.run) || need).phase !== "success");
  const waiting = $("#needs-waiting");
  waiting.hidden = shown.phase !== "queued" || pending.length === 0;
  waiting.textContent = waiting.hidden ? "" : `waiting for ${pending.map((need) => `${need.action} run ${need.run}`).join(", ")}`;
}

// The graph of one run's needs: the runs it needs on the left, the run in the middle, the runs
// that need it on the right, each a box linked to its page and outlined in its phase's colour,
// arrows from what is needed to what needs it. Drawn again with the page (so live).
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) if (child != null) node.append(child);
  return node;
}

function drawNeedsGraph(run, shown) {
  const graph = $("#needs-graph");
  const needs = run.needs || [], neededBy = run.neededBy || [];
  const none = needs.length === 0 && neededBy.length === 0;
  graph.toggleAttribute("hidden", none);
  if (none) return graph.replaceChildren();
  const [width, height, gap, column] = [190, 34, 12, 270];
  const rows = Math.max(needs.length, neededBy.length, 1);
  const total = rows * (height + gap) - gap;
  const top = (count, index) => (total - (count * (height + gap) - gap)) / 2 + index * (height + gap);
  const box = (item, x, y, self) => {
    const phase = self ? shown.phase : (state.runs.get(item.run) || item).phase;
    const label = `${item.action} run ${item.run}`;
    const node = svg("g", { class: `node node-${phase}${self ? " self" : ""}`, "data-run": item.run, "data-phase": phase },
      svg("rect", { x, y, width, height, rx: 6 }),
      svg("text", { x: x + 10, y: y + 22 }, `${label.length > 22 ? label.slice(0, 21) + "…" : label} · ${phase}`),
      svg("title", {}, `${label}: ${phase}`));
    return self ? node : svg("a", { href: `/runs/${item.run}` }, node);
  };
  const arrow = (x1, y1, x2, y2) => svg("path", { class: "edge", d: `M${x1},${y1} C${x1 + 40},${y1} ${x2 - 40},${y2} ${x2},${y2}`, "marker-end": "url(#needs-arrow)" });
  const middle = top(1, 0);
  const parts = [svg("defs", {}, svg("marker", { id: "needs-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto" },
    svg("path", { d: "M0,0 L10,5 L0,10 z" })))];
  needs.forEach((need, index) => {
    const y = top(needs.length, index);
    parts.push(arrow(width, y + height / 2, column, middle + height / 2), box(need, 0, y, false));
  });
  parts.push(box({ action: run.action, run: run.id }, column, middle, true));
  neededBy.forEach((other, index) => {
    const y = top(neededBy.length, index);
    parts.push(arrow(column + width, middle + height / 2, 2 * column, y + height / 2), box(other, 2 * column, y, false));
  });
  graph.setAttribute("viewBox", `-2 -2 ${2 * column + width + 4} ${total + 4}`);
  graph.setAttribute("aria-label", `run ${run.id} needs ${needs.map((n) => `${n.action} run ${n.run}`).join(", ") || "nothing"}`
    + (neededBy.length ? `; needed by ${neededBy.map((n) => `${n.action} run ${n.run}`).join(", ")}` : ""));
  graph.replaceChildren(...parts);
}

// What each decision recorded against a run meant for its trigger, as `baton show` says it.
const DECIDED = {
  joined: "joined (shared this run's outcome)",
  coalesced: "coalesced (shared this follow-up's outcome)",
  rejected: "rejected (busy: this run was in flight)",
  cooled: "cooled (answered with this success inside the cooldown; nothing ran)",
  "scheduled slot already ran": "scheduled slot already ran (answered with this run; nothing ran)",
  debounced: "debounced (joined this pending run and pushed its start back)",
};

// ---- a run's output --------------------------------------------------------------------------

// What a run wrote is untrusted: it goes into the page as text nodes only, never as HTML. A small
// set of SGR colours (and bold) become CSS classes; every other escape sequence and control
// character is dropped. stderr is its own class, in order with stdout as the chunks came.
const output = {
  next: 0,          // the position just past the last byte shown
  bytes: 0,         // bytes shown
  started: false,
  streams: {},      // stdout/stderr -> { utf8: TextDecoder, carry, fg, bg, bold }
};

function outputStream(name) {
  if (!output.streams[name]) output.streams[name] = { utf8: new TextDecoder("utf-8"), carry: "", fg: null, bg: null, bold: false };
  return output.streams[name];
}

// Where the escape sequence at `i` ends (the index after it), or -1 when the text ends first.
function escapeEnd(text, i) {
  const kind = text[i + 1];
  if (kind === undefined) return -1;
  const code = (j) => text.charCodeAt(j);
  if (kind === "[") {
    let j = i + 2;
    while (j < text.length && code(j) >= 0x20 && code(j) <= 0x3f) j++;
    if (j === text.length) return -1;
    return code(j) >= 0x40 && code(j) <= 0x7e ? j + 1 : j;
  }
  if ("]PX^_".includes(kind)) {
    // A string (a title, a hyperlink, ...): up to BEL or ESC \.
    for (let j = i + 2; j < text.length; j++) {
      if (code(j) === 0x07) return j + 1;
      if (code(j) === 0x1b) return text[j + 1] === undefined ? -1 : (text[j + 1] === "\\" ? j + 2 : j);
    }
    return -1;
  }
  let j = i + 1;
  while (j < text.length && code(j) >= 0x20 && code(j) <= 0x2f) j++;
  if (j === text.length) return -1;
  return code(j) >= 0x30 && code(j) <= 0x7e ? j + 1 : j;
}

function applySGR(stream, params) {
  const list = params === "" ? [0] : params.split(";").map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : -1));
  for (let k = 0; k < list.length; k++) {
    const n = list[k];
    if (n === 0) { stream.fg = null; stream.bg = null; stream.bold = false; }
    else if (n === 1) stream.bold = true;
    else if (n === 22) stream.bold = false;
    else if (n >= 30 && n <= 37) stream.fg = n - 30;
    else if (n >= 90 && n <= 97) stream.fg = n - 90 + 8;
    else if (n === 39) stream.fg = null;
    else if (n >= 40 && n <= 47) stream.bg = n - 40;
    else if (n >= 100 && n <= 107) stream.bg = n - 100 + 8;
    else if (n === 49) stream.bg = null;
    else if (n === 38 || n === 48) k += list[k + 1] === 5 ? 2 : (list[k + 1] === 2 ? 4 : 0);   // other colours: not shown
  }
}

function outputClass(name, stream) {
  let classes = `out-${name}`;
  if (stream.bold) classes += " ansi-bold";
  if (stream.fg !== null) classes += ` ansi-fg-${stream.fg}`;
  if (stream.bg !== null) classes += ` ansi-bg-${stream.bg}`;
  return classes;
}

// Text of one stream as [class, text] pieces; an escape (or a CR) split from its end by the
// chunk's end waits for the next chunk.
function outputPieces(name, text) {
  const stream = outputStream(name);
  const input = stream.carry + text;
  stream.carry = "";
  const pieces = [];
  let plain = "";
  const flush = () => { if (plain) pieces.push([outputClass(name, stream), plain]); plain = ""; };
  for (let i = 0; i < input.length;) {
    const c = input.charCodeAt(i);
    if (c === 0x1b) {
      const end = escapeEnd(input, i);
      if (end < 0 && input.length - i <= 4096) { stream.carry = input.slice(i); break; }
      if (end < 0) { i += 1; continue; }
      const sequence = input.slice(i, end);
      if (/^\x1b\[[0-9;]*m$/.test(sequence)) { flush(); applySGR(stream, sequence.slice(2, -1)); }
      i = end;
    } else if (c === 0x0d) {
      // CR LF is a line end; a lone CR (a progress bar) starts a new line.
      if (i + 1 === input.length) { stream.carry = "\r"; break; }
      if (input[i + 1] !== "\n") plain += "\n";
      i += 1;
    } else {
      if (c === 0x0a || c === 0x09 || (c >= 0x20 && c !== 0x7f && !(c >= 0x80 && c < 0xa0))) plain += input[i];
      i += 1;
    }
  }
  flush();
  return pieces;
}

function appendOutput(pieces) {
  const box = $("#output");
  // Follow the end unless the reader scrolled up.
  const atEnd = box.scrollTop + box.clientHeight >= box.scrollHeight - 8;
  for (const [classes, text] of pieces) {
    const last = box.lastChild;
    if (last && last.className === classes && last.firstChild) last.firstChild.appendData(text);
    else box.append(el("span", { class: classes, text }));
  }
  if (atEnd) box.scrollTop = box.scrollHeight;
}

function showChunk(chunk) {
  const bytes = Uint8Array.from(atob(chunk.data), (c) => c.charCodeAt(0));
  if (chunk.start + bytes.length <= output.next) return;
  if (chunk.start > output.next) {
    // Bytes the history did not keep (past the action's output.keep): say so where they were.
    for (const stream of Object.values(output.streams)) { stream.carry = ""; stream.utf8 = new TextDecoder("utf-8"); }
    appendOutput([["out-gap", `\n… ${chunk.start - output.next} bytes not kept …\n`]]);
  }
  const fresh = bytes.subarray(Math.max(0, output.next - chunk.start));
  const stream = outputStream(chunk.stream);
  appendOutput(outputPieces(chunk.stream, stream.utf8.decode(fresh, { stream: true })));
  output.next = chunk.start + bytes.length;
  output.bytes += fresh.length;
  $("#output-note").textContent = "Live: new output shows as the run writes it.";
}

function outputEnded(end) {
  const tail = [];
  for (const [name, stream] of Object.entries(output.streams)) {
    tail.push(...outputPieces(name, stream.utf8.decode()));
    if (stream.carry === "\r") tail.push([outputClass(name, stream), "\n"]);
    stream.carry = "";
  }
  appendOutput(tail);
  const note = $("#output-note");
  note.dataset.state = "ended";
  if (output.bytes === 0 && !end.outputDropped) note.textContent = "No output.";
  else if (end.outputDropped) note.textContent = `The whole output as kept: ${end.outputDropped} bytes in the middle were not kept (past the action's output.keep).`;
  else note.textContent = `The whole output: ${output.bytes} bytes.`;
}

// Follows the run's output on its own stream until the run ends; after a drop it resumes from
// the last byte it shows (Last-Event-ID is a position in the output).
async function followOutput() {
  if (output.started) return;
  output.started = true;
  const note = $("#output-note");
  let finished = false;
  const handlers = {
    output: (data) => showChunk(JSON.parse(data)),
    end: (data) => { finished = true; outputEnded(JSON.parse(data)); },
    refused: (data) => { finished = true; note.textContent = JSON.parse(data).message; },
    offline: (data) => { note.textContent = `reconnecting: ${JSON.parse(data).message}`; },
  };
  for (let delay = 500; session && !finished; delay = Math.min(delay * 2, 5000)) {
    try {
      const headers = { ...authorization(), Accept: "text/event-stream" };
      // Each event's id is the position after its chunk: resume from what is shown, even after a
      // read that failed midway.
      if (output.next) headers["Last-Event-ID"] = String(output.next);
      const response = await fetch(`/api/runs/${state.runID}/output`, { headers, cache: "no-store" });
      if (response.status === 401) { signedOut(); break; }
      if (!response.ok || !response.body) throw new Error(`${response.status}`);
      delay = 500;
      await readEvents(response.body, handlers, null);
    } catch (error) {
      // Dropped: try again below.
    }
    if (!finished) await new Promise((resolve) => setTimeout(resolve, delay));
  }
  output.started = finished;
}

// "Download raw": the bytes as the run wrote them, fetched with the session (a plain link would
// carry none) and saved from memory.
async function downloadRaw(event) {
  event.preventDefault();
  const note = $("#output-raw-note");
  note.textContent = "downloading…";
  const blob = await download(`/api/runs/${state.runID}/output.raw`, `run-${state.runID}-output`, note);
  if (blob) note.textContent = `downloaded ${blob.size} bytes`;
}

// ---- start -----------------------------------------------------------------------------------

function tick() {
  if (state.view !== "actions") return;
  for (const span of document.querySelectorAll(".ago[data-at]")) span.textContent = ago(Number(span.dataset.at));
  for (const span of document.querySelectorAll(".took[data-start]")) span.textContent = duration(nowMicros() - Number(span.dataset.start));
  for (const [name, card] of state.cards) {
    const info = state.actions.get(name);
    if (info && info.cooldown) drawPress(card, info, liveRuns(name));
    for (const item of card.flights.children) {
      const run = state.runs.get(Number(item.dataset.run));
      if (run) drawFlight(item, run);
    }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  if (state.view === "action") { $("#actions-view").hidden = true; $("#action-view").hidden = false; }
  else if (state.view === "run") {
    $("#actions-view").hidden = true; $("#run-view").hidden = false;
    const raw = $("#output-raw");
    raw.href = `/api/runs/${state.runID}/output.raw`;
    raw.addEventListener("click", downloadRaw);
  }
  else {
    $("#filters").addEventListener("change", loadHistory);
    $("#filters").addEventListener("submit", (event) => { event.preventDefault(); loadHistory(); });
    $("#search").addEventListener("submit", (event) => { event.preventDefault(); search(); });
  }
  setInterval(tick, 250);
  start();
  // A new address pasted into this tab changes only its fragment: the page does not load again.
  window.addEventListener("hashchange", () => { if (location.hash.startsWith("#code=")) start(); });
});
