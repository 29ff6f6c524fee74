// The page of `recall serve`: ask the vault and follow up, in a browser.
//
// It speaks the server's own OpenAI-compatible API (POST /v1/chat/completions, streamed) and
// reads GET /v1/recall/status for what the server runs on. The conversation is kept in this
// browser (localStorage) and sent whole with every question, as any chat client sends it.
// Nothing is fetched from anywhere but this server, and no HTML is ever built from text: every
// piece of an answer becomes DOM nodes through textContent.
"use strict";

const STORE = "recall.conversation";
const KEY_STORE = "recall.key";
const STATUS_EVERY_MS = 5000;
const STATUS_EMBEDDING_EVERY_MS = 1000;

const $ = (id) => document.getElementById(id);

/** Every turn of this conversation: {question, answer, citations, fallback, state, timing}. */
let turns = load();
/** The turn being answered: {turn, view, controller}; null when idle. */
let running = null;

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORE) || "[]");
    return Array.isArray(saved) ? saved : [];
  } catch {
    return [];
  }
}

function save() {
  try {
    localStorage.setItem(STORE, JSON.stringify(turns));
  } catch {
    // A full or disabled storage loses only the reload's copy, never the page's.
  }
}

// ---- Markdown, as DOM nodes ------------------------------------------------------------

/** Appends `text`'s inline Markdown to `parent`: code, bold, italics, links, `[n]` marks. */
function inline(parent, text) {
  const pattern =
    /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*|_[^_\s][^_]*_)|\[([^\]]+)\]\(<?([^)>\s]+)>?\)|\[(\d+(?:\s*,\s*\d+)*)\]/g;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) {
      const code = document.createElement("code");
      code.textContent = m[1].slice(1, -1);
      parent.append(code);
    } else if (m[2]) {
      const strong = document.createElement("strong");
      inline(strong, m[2].slice(2, -2));
      parent.append(strong);
    } else if (m[3]) {
      const em = document.createElement("em");
      inline(em, m[3].slice(1, -1));
      parent.append(em);
    } else if (m[4]) {
      parent.append(link(m[4], m[5]));
    } else {
      const mark = document.createElement("sup");
      mark.className = "cite";
      mark.textContent = `[${m[6]}]`;
      mark.dataset.numbers = m[6].replace(/\s+/g, "");
      parent.append(mark);
    }
  }
  if (last < text.length) parent.append(text.slice(last));
}

/** A link that may only lead to a web page or to Obsidian; any other scheme stays text. */
function link(label, href) {
  if (!/^(https?:|obsidian:)/i.test(href)) return document.createTextNode(label);
  const a = document.createElement("a");
  a.href = href;
  a.textContent = label;
  if (/^https?:/i.test(href)) a.rel = "noopener noreferrer";
  return a;
}

/** Renders Markdown blocks (paragraphs, headings, lists, quotes, code) into `parent`. */
function markdown(parent, text) {
  parent.replaceChildren();
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) {
      i += 1;
    } else if (/^```/.test(line)) {
      const pre = document.createElement("pre");
      const body = [];
      for (i += 1; i < lines.length && !/^```/.test(lines[i]); i += 1) body.push(lines[i]);
      i += 1;
      pre.textContent = body.join("\n");
      parent.append(pre);
    } else if (/^#{1,6}\s/.test(line)) {
      const level = Math.min(line.match(/^#+/)[0].length + 2, 6);
      const h = document.createElement(`h${level}`);
      inline(h, line.replace(/^#+\s*/, ""));
      parent.append(h);
      i += 1;
    } else if (/^\s*([-*+]|\d+[.)])\s+/.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = document.createElement(ordered ? "ol" : "ul");
      while (i < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i])) {
        const item = document.createElement("li");
        inline(item, lines[i].replace(/^\s*([-*+]|\d+[.)])\s+/, ""));
        list.append(item);
        i += 1;
      }
      parent.append(list);
    } else if (/^>/.test(line)) {
      const quote = document.createElement("blockquote");
      const body = [];
      for (; i < lines.length && /^>/.test(lines[i]); i += 1) body.push(lines[i].replace(/^>\s?/, ""));
      markdown(quote, body.join("\n"));
      parent.append(quote);
    } else {
      const p = document.createElement("p");
      const body = [];
      for (; i < lines.length && !/^\s*$/.test(lines[i]) && !/^(```|#{1,6}\s|>|\s*([-*+]|\d+[.)])\s)/.test(lines[i]); i += 1) {
        body.push(lines[i]);
      }
      body.forEach((piece, n) => {
        if (n > 0) p.append(document.createElement("br"));
        inline(p, piece);
      });
      parent.append(p);
    }
  }
}

// ---- Turns on the page -----------------------------------------------------------------

/** Draws a turn (new, or from the saved conversation); returns its parts to update. */
function view(turn) {
  const node = $("turn-template").content.firstElementChild.cloneNode(true);
  node.querySelector(".question").textContent = turn.question;
  $("log").append(node);
  $("empty").hidden = true;
  const parts = {
    node,
    answer: node.querySelector(".answer"),
    text: node.querySelector(".text"),
    status: node.querySelector(".status"),
    verdict: node.querySelector(".verdict"),
    sources: node.querySelector(".sources"),
    sourcesTitle: node.querySelector(".sources-title"),
    sourceList: node.querySelector(".source-list"),
    timing: node.querySelector(".timing"),
  };
  draw(turn, parts);
  return parts;
}

const STATUS_TEXT = {
  waiting: "Searching your notes…",
  streaming: "",
  done: "",
  stopped: "Stopped.",
  failed: "",
};

function draw(turn, parts) {
  parts.answer.dataset.state = turn.state;
  markdown(parts.text, turn.answer);
  parts.status.textContent = turn.state === "failed" ? turn.error : STATUS_TEXT[turn.state] || "";
  parts.verdict.hidden = !turn.fallback;
  parts.answer.classList.toggle("not-in-notes", !!turn.fallback);
  drawSources(turn, parts);
  const t = turn.timing;
  parts.timing.textContent = t && t.total != null ? timingText(t) : "";
  for (const mark of parts.text.querySelectorAll(".cite")) {
    mark.addEventListener("click", () => {
      const first = mark.dataset.numbers.split(",")[0];
      const item = parts.sourceList.querySelector(`[data-number="${first}"]`);
      if (item) item.scrollIntoView({ behavior: "smooth", block: "nearest" });
    });
  }
}

function timingText(t) {
  const parts = [];
  if (t.first != null) parts.push(`first words after ${(t.first / 1000).toFixed(1)} s`);
  parts.push(`${(t.total / 1000).toFixed(1)} s in all`);
  if (t.tokens) parts.push(`${t.tokens} tokens read and written`);
  return parts.join(" · ");
}

function drawSources(turn, parts) {
  const citations = turn.citations || [];
  parts.sources.hidden = citations.length === 0;
  const cited = citations.some((c) => c.cited);
  parts.sourcesTitle.textContent = turn.fallback
    ? "Closest passages"
    : cited
      ? "Sources"
      : "Sources given (the answer cites none of them)";
  parts.sourceList.replaceChildren();
  for (const c of citations) {
    const item = document.createElement("li");
    item.dataset.number = String(c.number);
    item.className = c.cited ? "source cited" : "source";
    const number = document.createElement("span");
    number.className = "number";
    number.textContent = `[${c.number}]`;
    const a = link([c.title, ...(c.heading_path || [])].join(" › "), c.link);
    a.className = "source-link";
    a.title = "Open in Obsidian";
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.className = "passage-toggle";
    toggle.textContent = "passage";
    toggle.setAttribute("aria-expanded", "false");
    const passage = document.createElement("blockquote");
    passage.className = "passage";
    passage.hidden = true;
    passage.textContent = c.passage || "";
    toggle.addEventListener("click", () => {
      passage.hidden = !passage.hidden;
      toggle.setAttribute("aria-expanded", String(!passage.hidden));
    });
    item.append(number, " ", a, " ", toggle, passage);
    parts.sourceList.append(item);
  }
}

// ---- Asking ----------------------------------------------------------------------------

function headers() {
  const h = { "Content-Type": "application/json" };
  const key = localStorage.getItem(KEY_STORE);
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

/** The conversation as the API takes it: every answered turn, then the new question. */
function messages(question) {
  const list = [];
  for (const t of turns) {
    if (t.state !== "done") continue;
    list.push({ role: "user", content: t.question });
    list.push({ role: "assistant", content: t.answer });
  }
  list.push({ role: "user", content: question });
  return list;
}

async function ask(question) {
  const history = messages(question);
  const turn = { question, answer: "", citations: [], fallback: false, state: "waiting", timing: null };
  turns.push(turn);
  save();
  const parts = view(turn);
  parts.node.scrollIntoView({ block: "end" });
  const controller = new AbortController();
  running = { turn, parts, controller };
  setRunning(true);
  const started = performance.now();
  let first = null;
  // The answer's pieces as they came; the last, on the final chunk, is its sources as
  // Markdown, which the page draws from the data instead.
  const pieces = [];
  let frame = 0;
  const redraw = () => {
    if (!frame) {
      frame = requestAnimationFrame(() => {
        frame = 0;
        draw(turn, parts);
      });
    }
  };
  try {
    const response = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: headers(),
      body: JSON.stringify({ model: "recall", stream: true, messages: history }),
      signal: controller.signal,
    });
    if (response.status === 401) {
      askForKey();
      throw new Error("This server asks for its API key: give it above, then ask again.");
    }
    if (!response.ok) {
      throw new Error(await errorMessage(response));
    }
    turn.state = "streaming";
    redraw();
    for await (const event of serverEvents(response.body)) {
      if (event === "[DONE]") break;
      const chunk = JSON.parse(event);
      if (chunk.error) throw new Error(chunk.error.message);
      const delta = chunk.choices && chunk.choices[0] && chunk.choices[0].delta;
      if (delta && delta.content) {
        pieces.push(delta.content);
        if (first === null) first = performance.now() - started;
        turn.answer = pieces.join("");
        redraw();
      }
      if (chunk.recall) {
        pieces.pop();
        turn.answer = pieces.join("").trimEnd();
        turn.citations = chunk.recall.citations;
        turn.fallback = chunk.recall.fallback;
        turn.state = "done";
        turn.timing = {
          first,
          total: performance.now() - started,
          tokens: chunk.usage ? chunk.usage.total_tokens : null,
        };
      }
    }
    if (turn.state !== "done") throw new Error("The answer ended before it was finished.");
  } catch (err) {
    if (controller.signal.aborted) {
      turn.state = "stopped";
    } else {
      turn.state = "failed";
      turn.error = err.message || String(err);
    }
    turn.timing = { first, total: performance.now() - started };
  } finally {
    if (frame) cancelAnimationFrame(frame);
    running = null;
    setRunning(false);
    draw(turn, parts);
    save();
    refreshStatus();
  }
}

/** The `data:` payloads of a server-sent event stream, as they arrive. */
async function* serverEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      // Lines that start with ':' keep an idle stream alive and carry nothing.
      if (data) yield data;
    }
  }
}

async function errorMessage(response) {
  try {
    const body = await response.json();
    if (body.error && body.error.message) return body.error.message;
  } catch {
    // Not the API's error shape: say the status.
  }
  return `The server answered ${response.status} ${response.statusText}.`;
}

function stop() {
  if (running) running.controller.abort();
}

function setRunning(on) {
  $("send").hidden = on;
  $("stop").hidden = !on;
  $("question").readOnly = on;
}

// ---- What it runs on -------------------------------------------------------------------

let statusTimer = 0;

async function refreshStatus() {
  clearTimeout(statusTimer);
  let next = STATUS_EVERY_MS;
  try {
    const response = await fetch("/v1/recall/status", { headers: headers() });
    if (response.status === 401) {
      askForKey();
      return;
    }
    if (response.ok) {
      const status = await response.json();
      drawStatus(status);
      const e = status.vault && status.vault.index && status.vault.index.embedding;
      if (e && (e.state === "loading" || e.state === "embedding")) next = STATUS_EMBEDDING_EVERY_MS;
    }
  } catch {
    $("about-index").textContent = "The server does not answer.";
  }
  statusTimer = setTimeout(refreshStatus, next);
}

function drawStatus(status) {
  const m = status.model;
  $("about-model").textContent = `Model: ${m.name}`;
  $("about-model").title = `${m.file}, ${m.context} tokens of context`;
  const v = status.vault;
  $("about-vault").textContent = v ? `Vault: ${v.name}` : "No vault server";
  $("about-index").textContent = v && v.index ? indexText(v.index) : "";
  const t = status.turns;
  const busy = t.busy ? `answering${t.waiting ? `, ${t.waiting} waiting` : ""}` : "";
  const last = t.last_seconds != null ? `last turn ${t.last_seconds.toFixed(1)} s` : "";
  $("about-turns").textContent = [busy, last].filter(Boolean).join(" · ");
}

function indexText(index) {
  const notes = `${index.notes} notes`;
  if (!index.vault_available) return `${notes}; the vault folder is missing`;
  const e = index.embedding;
  if (!e) return `${notes}, searched by words`;
  if (e.state === "ready") return `${notes}, searched by meaning and words`;
  if (e.state === "failed") return `${notes}, searched by words (embedding failed: ${e.error || "unknown"})`;
  if (e.state === "loading") return `${notes}; loading the embedding model…`;
  const eta = e.eta_seconds != null ? `, about ${e.eta_seconds} s left` : "";
  return `${notes}; embedding ${e.passages} of ${e.total} passages${eta} (searched by words until then)`;
}

// ---- The key, when the server asks for one ---------------------------------------------

function askForKey() {
  $("key-form").hidden = false;
  $("key-input").focus();
}

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  localStorage.setItem(KEY_STORE, $("key-input").value);
  $("key-input").value = "";
  $("key-form").hidden = true;
  refreshStatus();
  $("question").focus();
});

// ---- Study: summaries, quiz items, review -------------------------------------------

/** Shows the ask view or the study view. */
function showView(study) {
  $("study").hidden = !study;
  $("log").hidden = study;
  $("composer").hidden = study;
  $("new").hidden = study;
  $("tab-ask").setAttribute("aria-pressed", String(!study));
  $("tab-study").setAttribute("aria-pressed", String(study));
  if (study) refreshDue();
}

/** POSTs `body` to a study endpoint; shows what the server is doing while it works. */
async function studyCall(path, body) {
  const progress = $("study-progress");
  const started = performance.now();
  const tick = setInterval(async () => {
    const seconds = ((performance.now() - started) / 1000).toFixed(0);
    let doing = "";
    try {
      const response = await fetch("/v1/recall/status", { headers: headers() });
      if (response.ok) doing = (await response.json()).turns.doing || "";
    } catch {
      // The progress line only loses its detail.
    }
    progress.textContent = `${doing || "waiting for the model"}… ${seconds} s`;
  }, 1000);
  progress.textContent = "Working…";
  setStudyBusy(true);
  try {
    const response = await fetch(path, { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (response.status === 401) askForKey();
    if (!response.ok) throw new Error(await errorMessage(response));
    const report = await response.json();
    progress.textContent = `Done in ${((performance.now() - started) / 1000).toFixed(1)} s.`;
    return report;
  } catch (err) {
    progress.textContent = err.message || String(err);
    return null;
  } finally {
    clearInterval(tick);
    setStudyBusy(false);
  }
}

function setStudyBusy(on) {
  for (const id of ["summarize", "make-quiz", "review-grade"]) $(id).disabled = on;
}

/** A note's title and heading as a link that opens it in Obsidian. */
function sourceLink(source) {
  const label = source.heading ? `${source.title} › ${source.heading}` : source.title;
  const a = link(label, source.link);
  a.className = "source-link";
  return a;
}

function drawSummary(report) {
  const result = $("study-result");
  result.replaceChildren();
  result.hidden = false;
  const list = document.createElement("ul");
  list.className = "points";
  for (const point of report.points) {
    const item = document.createElement("li");
    inline(item, point.text);
    if (point.source) item.append(" ", sourceLink(point.source));
    list.append(item);
  }
  const read = document.createElement("p");
  read.className = "timing";
  read.textContent = `Read ${report.read.read} of ${report.read.of} ${report.read.unit}, ${report.read.words} words.`;
  result.append(list, read);
}

function drawQuiz(report, saved) {
  const result = $("study-result");
  result.replaceChildren();
  result.hidden = false;
  const list = document.createElement("ol");
  list.className = "quiz";
  for (const q of report.questions) {
    const item = document.createElement("li");
    const question = document.createElement("p");
    question.textContent = q.question;
    const answer = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = "Answer";
    const text = document.createElement("p");
    text.textContent = q.answer;
    answer.append(summary, text, sourceLink(q.source));
    item.append(question, answer);
    list.append(item);
  }
  result.append(list);
  if (saved) {
    const note = document.createElement("p");
    note.className = "timing";
    note.textContent = "Added to the review deck.";
    result.append(note);
    refreshDue();
  }
}

$("study-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const report = await studyCall("/v1/recall/summarize", { target: $("study-target").value });
  if (report) drawSummary(report);
});

$("make-quiz").addEventListener("click", async () => {
  if (!$("study-form").reportValidity()) return;
  const save = $("quiz-save").checked;
  const body = { target: $("study-target").value, count: Number($("quiz-count").value) || 5, save };
  const report = await studyCall("/v1/recall/quiz", body);
  if (report) drawQuiz(report, save);
});

/** The due cards, as last listed; the first is the one asked. */
let due = [];

async function refreshDue() {
  try {
    const response = await fetch("/v1/recall/review", { headers: headers() });
    if (response.status === 401) return askForKey();
    if (!response.ok) throw new Error(await errorMessage(response));
    const list = await response.json();
    due = list.due;
    const next = list.next_due ? `; the next is due ${new Date(list.next_due).toLocaleString()}` : "";
    $("review-due").textContent = due.length
      ? `${due.length} of ${list.cards} cards due.`
      : `Nothing due (${list.cards} cards${next}).`;
    $("review-start").hidden = due.length === 0;
  } catch (err) {
    $("review-due").textContent = err.message || String(err);
  }
}

function showCard() {
  const card = due[0];
  $("review-card").hidden = !card;
  if (!card) return refreshDue();
  $("review-question").textContent = card.question;
  $("review-from").replaceChildren("from ", sourceLink(card.source));
  $("review-answer").value = "";
  $("review-answer").readOnly = false;
  $("review-grade").hidden = false;
  $("review-result").hidden = true;
  $("review-next").hidden = true;
  $("review-answer").focus();
}

$("review-start").addEventListener("click", showCard);

$("review-card").addEventListener("submit", async (event) => {
  event.preventDefault();
  const card = due[0];
  const answer = $("review-answer").value;
  if (!card || !answer.trim()) return;
  const graded = await studyCall("/v1/recall/review/grade", { card: card.card, question: card.question, answer });
  if (!graded) return;
  const result = $("review-result");
  const verdict = document.createElement("p");
  verdict.className = "grade";
  verdict.textContent = `${graded.grade || "ungraded"}: ${graded.why}`;
  const expected = document.createElement("p");
  expected.textContent = `The note says: ${graded.answer}`;
  const next = document.createElement("p");
  next.className = "timing";
  next.textContent = graded.next_due
    ? `Next review ${new Date(graded.next_due).toLocaleString()}.`
    : "The card stays due.";
  result.replaceChildren(verdict, expected, next);
  result.hidden = false;
  $("review-answer").readOnly = true;
  $("review-grade").hidden = true;
  $("review-next").hidden = false;
  if (graded.grade) due.shift();
});

$("review-next").addEventListener("click", showCard);

$("tab-ask").addEventListener("click", () => showView(false));
$("tab-study").addEventListener("click", () => showView(true));

// ---- Wiring ----------------------------------------------------------------------------

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question || running) return;
  $("question").value = "";
  ask(question);
});

$("question").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape") stop();
});

$("stop").addEventListener("click", stop);

$("new").addEventListener("click", () => {
  stop();
  turns = [];
  save();
  for (const node of document.querySelectorAll("#log .turn")) node.remove();
  $("empty").hidden = false;
  $("question").focus();
});

// A reload while a turn ran leaves it unfinished: it was stopped with the page.
for (const turn of turns) {
  if (turn.state === "waiting" || turn.state === "streaming") turn.state = "stopped";
  view(turn);
}
save();
refreshStatus();
