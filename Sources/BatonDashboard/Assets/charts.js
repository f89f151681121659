// Charts: the action's own page (/actions/NAME) and a small chart on each card, drawn with the
// system's Chart.js (Debian's libjs-chart.js, served as /chart.js). Without it the page says so
// and shows the figures as text. Uses app.js's helpers (el, $, api, duration, localTime).
"use strict";

const OUTCOME_COLOURS = { success: "#1b7f3b", failure: "#c0392b", cancelled: "#a66300" };
const outcomeColour = (phase) => OUTCOME_COLOURS[phase] || "#6b7280";
const chartsAvailable = () => typeof window.Chart === "function";
const runDuration = (run) => (run.startedAt && run.endedAt ? run.endedAt - run.startedAt : null);
const seconds = (micros) => (micros == null ? null : micros / 1e6);
const mebibytes = (bytes) => (bytes == null ? null : bytes / 1048576);

// Draws (or redraws) a chart on a canvas: Chart.js keeps one chart per canvas.
function drawChart(canvas, config) {
  if (!chartsAvailable()) return null;
  // Text and grid in the page's own colours (light or dark).
  const style = getComputedStyle(document.documentElement);
  window.Chart.defaults.color = style.getPropertyValue("--muted").trim() || "#5d6570";
  window.Chart.defaults.borderColor = style.getPropertyValue("--line").trim() || "#dde1e6";
  const existing = window.Chart.getChart(canvas);
  if (existing) existing.destroy();
  config.options = { animation: false, responsive: true, maintainAspectRatio: false, ...config.options };
  return new window.Chart(canvas, config);
}

// ---- the cards: recent durations, coloured by outcome -----------------------------------------

let cardChartsTimer = null;
function scheduleCardCharts() {
  clearTimeout(cardChartsTimer);
  cardChartsTimer = setTimeout(drawCardCharts, 500);
}

async function drawCardCharts() {
  if (!chartsAvailable()) return;
  const answer = await api("/api/stats");
  if (!answer.ok) return;
  for (const stats of answer.stats || []) {
    const card = state.cards.get(stats.action);
    if (!card) continue;
    let canvas = card.root.querySelector("canvas.card-chart");
    const recent = (stats.recent || []).filter((run) => run.duration != null);
    if (recent.length === 0) { canvas?.parentElement.remove(); continue; }
    if (!canvas) {
      canvas = el("canvas", { class: "card-chart", "aria-label": `${stats.action}: recent durations, coloured by outcome`, role: "img" });
      card.last.after(el("div", { class: "card-chart-box" }, canvas));
    }
    drawChart(canvas, {
      type: "bar",
      data: { labels: recent.map((run) => `run ${run.id}`),
              datasets: [{ label: "seconds", data: recent.map((run) => seconds(run.duration)), backgroundColor: recent.map((run) => outcomeColour(run.phase)) }] },
      options: { plugins: { legend: { display: false } }, scales: { x: { display: false }, y: { display: false, beginAtZero: true } } },
    });
  }
}

// ---- an action's page -------------------------------------------------------------------------

let actionRequest = 0;
let actionTimer = null;
function scheduleActionPage() {
  clearTimeout(actionTimer);
  actionTimer = setTimeout(loadActionPage, 500);
}

async function loadActionPage() {
  const name = state.actionName;
  document.title = `${name} · Baton`;
  $("#action-title").textContent = name;
  const mine = ++actionRequest;
  const [history, stats] = await Promise.all([
    api(`/api/history?${new URLSearchParams({ action: name, limit: "200" })}`),
    api(`/api/stats?${new URLSearchParams({ action: name })}`),
  ]);
  if (mine !== actionRequest) return;
  if (!history.ok || !stats.ok) { $("#action-note").textContent = (history.error || stats.error).message; return; }
  const runs = (history.runs || []).filter((run) => TERMINAL.has(run.phase) && runDuration(run) != null).reverse();
  renderActionFacts((stats.stats || [])[0], runs.length);
  if (!chartsAvailable()) { $("#action-note").textContent = "Charts need Chart.js on the dashboard's machine: install the libjs-chart.js package."; return; }
  $("#action-note").textContent = runs.length ? `The last ${runs.length} ended runs, oldest first.` : "No ended run yet.";
  drawDurations(runs, (stats.stats || [])[0]);
  drawDaily(runs);
  drawUsage(runs);
}

function renderActionFacts(stats, shown) {
  const facts = [];
  const add = (term, value) => facts.push(el("dt", { text: term }), el("dd", { text: value }));
  if (stats) {
    add("Runs", `${stats.success} succeeded, ${stats.failure} failed, ${stats.cancelled} cancelled`);
    add("Success rate", stats.successRate == null ? "-" : `${Math.round(stats.successRate * 100)}%`);
    add("p50 / p95", `${stats.p50 == null ? "-" : duration(stats.p50)} / ${stats.p95 == null ? "-" : duration(stats.p95)}`);
    if (stats.cpuP50 != null) add("CPU p50 / p95", `${duration(stats.cpuP50)} / ${duration(stats.cpuP95)}`);
    if (stats.memoryP50 != null) add("Peak memory p50 / p95", `${mebibytes(stats.memoryP50).toFixed(1)} / ${mebibytes(stats.memoryP95).toFixed(1)} MiB`);
  }
  $("#action-facts").replaceChildren(...facts);
}

// Each run's duration, a bar coloured by its outcome, with the action's p50 and p95 as lines.
function drawDurations(runs, stats) {
  const labels = runs.map((run) => `#${run.id}`);
  const flat = (value, label, colour) => ({ type: "line", label, data: runs.map(() => seconds(value)), borderColor: colour,
                                            borderDash: [6, 4], pointRadius: 0, borderWidth: 1.5 });
  const datasets = [{ type: "bar", label: "duration (s)", data: runs.map((run) => seconds(runDuration(run))),
                      backgroundColor: runs.map((run) => outcomeColour(run.phase)) }];
  if (stats && stats.p50 != null) datasets.push(flat(stats.p50, "p50", "#2f6fde"));
  if (stats && stats.p95 != null) datasets.push(flat(stats.p95, "p95", "#9b3fb5"));
  drawChart($("#chart-durations"), { type: "bar", data: { labels, datasets },
    options: { scales: { y: { beginAtZero: true, title: { display: true, text: "seconds" } } } } });
}

// The share of each day's ended runs (success and failure; cancelled ones aside) that succeeded.
function drawDaily(runs) {
  const days = new Map();
  for (const run of runs) {
    if (run.phase === "cancelled") continue;
    const day = new Date(run.endedAt / 1000).toLocaleDateString();
    const count = days.get(day) || { success: 0, all: 0 };
    count.all += 1;
    if (run.phase === "success") count.success += 1;
    days.set(day, count);
  }
  drawChart($("#chart-daily"), { type: "bar",
    data: { labels: [...days.keys()], datasets: [{ label: "success rate (%)", backgroundColor: OUTCOME_COLOURS.success,
      data: [...days.values()].map((count) => Math.round((count.success / count.all) * 100)) }] },
    options: { scales: { y: { min: 0, max: 100 } } } });
}

// CPU time (user + system) and peak memory of each run, where batond measured them.
function drawUsage(runs) {
  drawChart($("#chart-usage"), { type: "line",
    data: { labels: runs.map((run) => `#${run.id}`), datasets: [
      { label: "CPU (s)", yAxisID: "cpu", borderColor: "#2f6fde", backgroundColor: "#2f6fde",
        data: runs.map((run) => (run.cpuUser == null ? null : seconds(run.cpuUser + (run.cpuSystem || 0)))) },
      { label: "peak memory (MiB)", yAxisID: "memory", borderColor: "#0f7f8a", backgroundColor: "#0f7f8a",
        data: runs.map((run) => mebibytes(run.memoryPeak)) }] },
    options: { scales: { cpu: { position: "left", beginAtZero: true }, memory: { position: "right", beginAtZero: true, grid: { drawOnChartArea: false } } } } });
}
