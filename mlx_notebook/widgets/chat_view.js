// Front end of mlx_notebook.widgets.ChatView: one chat turn, streamed.
//
// The kernel sends the reply's new text as {kind: "delta", block, channel, offset, text,
// tokens, seconds} custom messages (coalesced to <= 20/s); everything else is synced traits.
// Deltas are accumulated once per model (in `initialize`), so every view of the turn, even
// one opened mid-stream, draws the same text. A view that sees a gap asks for {kind: "resync"}.
// Markdown and code highlighting are implemented here (same subset as display/_markdown.py)
// because a notebook must not fetch a renderer from a CDN.

const stores = new Map(); // turn_id -> {blocks, listeners}

function storeFor(model) {
  const id = model.get("turn_id");
  let store = stores.get(id);
  if (!store) {
    store = { blocks: structuredClone(model.get("blocks") || []), listeners: new Set() };
    stores.set(id, store);
  }
  return store;
}

function notify(store) {
  for (const listener of store.listeners) listener();
}

// ---- Markdown (subset: headings, paragraphs, fences, lists, quotes, rules, inline) ----------

const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;" };
const escapeHtml = (text) => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

const HASH_COMMENT_LANGS = new Set(["python", "py", "bash", "sh", "shell", "zsh", "ruby", "rb",
  "r", "yaml", "yml", "toml", "perl", "julia", "jl", "make", "makefile", "dockerfile", "text"]);
const KEYWORDS = new Set(("def class return if elif else for while in is not and or import from " +
  "as with try except finally raise lambda yield None True False pass break continue async await " +
  "let const var function new this typeof instanceof null undefined true false switch case " +
  "default do fn pub struct impl use mut match enum interface type export static void int float " +
  "double char bool auto template namespace include self super nonlocal global del assert " +
  "throw throws catch extends implements package public private protected final func go " +
  "select from where then end local echo fi esac done").split(" "));

function highlightCode(code, lang) {
  const hash = HASH_COMMENT_LANGS.has((lang || "").toLowerCase());
  const comment = hash ? "#[^\\n]*" : "\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?(?:\\*\\/|$)";
  const re = new RegExp(
    `(${comment})|("(?:[^"\\\\\\n]|\\\\.)*"?|'(?:[^'\\\\\\n]|\\\\.)*'?|\`(?:[^\`\\\\]|\\\\.)*\`?)` +
    "|(\\b\\d+(?:\\.\\d+)?(?:e[+-]?\\d+)?\\b)|([A-Za-z_$][\\w$]*)(?=\\s*\\()|([A-Za-z_$][\\w$]*)",
    "g");
  let out = "";
  let pos = 0;
  for (const m of code.matchAll(re)) {
    out += escapeHtml(code.slice(pos, m.index));
    pos = m.index + m[0].length;
    const text = escapeHtml(m[0]);
    if (m[1]) out += `<span class="mlxnb-tok-com">${text}</span>`;
    else if (m[2]) out += `<span class="mlxnb-tok-str">${text}</span>`;
    else if (m[3]) out += `<span class="mlxnb-tok-num">${text}</span>`;
    else if (m[4]) out += KEYWORDS.has(m[4]) ? `<span class="mlxnb-tok-kw">${text}</span>`
      : `<span class="mlxnb-tok-fn">${text}</span>`;
    else out += KEYWORDS.has(m[5]) ? `<span class="mlxnb-tok-kw">${text}</span>` : text;
  }
  return out + escapeHtml(code.slice(pos));
}

const INLINE = /(`+)(.+?)\1|\*\*(.+?)\*\*|__(.+?)__|(?<![\w*])\*([^*\s](?:[^*]*[^*\s])?)\*(?!\w)|(?<!\w)_([^_\s](?:[^_]*[^_\s])?)_(?!\w)|\[([^\]]+)\]\((https?:\/\/[^\s)]+)\)/g;

function inline(text) {
  let out = "";
  let pos = 0;
  for (const m of text.matchAll(INLINE)) {
    out += escapeHtml(text.slice(pos, m.index));
    pos = m.index + m[0].length;
    if (m[1]) out += `<code>${escapeHtml(m[2].trim())}</code>`;
    else if (m[3] || m[4]) out += `<strong>${inline(m[3] || m[4])}</strong>`;
    else if (m[5] || m[6]) out += `<em>${inline(m[5] || m[6])}</em>`;
    else out += `<a href="${escapeHtml(m[8])}" target="_blank" rel="noopener">${inline(m[7])}</a>`;
  }
  return out + escapeHtml(text.slice(pos));
}

const FENCE = /^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const BULLET = /^\s{0,3}[-*+]\s+(.*)$/;
const ORDERED = /^\s{0,3}(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;

export function markdown(text) {
  const lines = text.split("\n");
  const blocks = [];
  let paragraph = [];
  const closeParagraph = () => {
    if (paragraph.length) blocks.push(`<p>${inline(paragraph.join("\n"))}</p>`);
    paragraph = [];
  };
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = FENCE.exec(line);
    if (fence) {
      closeParagraph();
      const code = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) code.push(lines[i++]);
      const lang = fence[2] ? ` data-lang="${escapeHtml(fence[2])}"` : "";
      blocks.push(`<pre class="mlxnb-code"${lang}><code>${highlightCode(code.join("\n"), fence[2])}</code></pre>`);
      i += 1;
      continue;
    }
    let m;
    if (!line.trim()) closeParagraph();
    else if ((m = HEADING.exec(line))) {
      closeParagraph();
      blocks.push(`<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`);
    } else if (RULE.test(line)) {
      closeParagraph();
      blocks.push("<hr>");
    } else if (BULLET.test(line) || ORDERED.test(line)) {
      closeParagraph();
      const ordered = ORDERED.test(line);
      const pattern = ordered ? ORDERED : BULLET;
      const items = [];
      while (i < lines.length) {
        const item = pattern.exec(lines[i]);
        if (item) items.push([item[ordered ? 2 : 1]]);
        else if (lines[i].trim() && /^[ \t]/.test(lines[i]) && items.length) items[items.length - 1].push(lines[i].trim());
        else break;
        i += 1;
      }
      const start = ordered ? parseInt(ORDERED.exec(line)[1], 10) : 1;
      const tag = ordered ? "ol" : "ul";
      const attr = ordered && start !== 1 ? ` start="${start}"` : "";
      blocks.push(`<${tag}${attr}>${items.map((item) => `<li>${inline(item.join(" "))}</li>`).join("")}</${tag}>`);
      continue;
    } else if (QUOTE.test(line)) {
      closeParagraph();
      const quoted = [];
      while (i < lines.length && QUOTE.test(lines[i])) quoted.push(QUOTE.exec(lines[i++])[1]);
      blocks.push(`<blockquote>${markdown(quoted.join("\n"))}</blockquote>`);
      continue;
    } else paragraph.push(line);
    i += 1;
  }
  closeParagraph();
  return blocks.join("");
}

// ---- numbers and footer (line for line as display/_numbers.py and display/_footer.py) -----
// Half-up rounding on the scaled value, as the Python twin does, so both print the same.

export function fixed(value, decimals) {
  const scale = 10 ** decimals;
  const scaled = Math.floor(Math.abs(value) * scale + 0.5);
  const sign = value < 0 && scaled ? "-" : "";
  if (!decimals) return `${sign}${scaled}`;
  const whole = Math.floor(scaled / scale);
  return `${sign}${whole}.${String(scaled - whole * scale).padStart(decimals, "0")}`;
}

const BYTE_UNITS = ["kB", "MB", "GB", "TB"];

export function formatBytes(count) {
  if (count === null || count === undefined) return null;
  let value = Number(count);
  if (Math.abs(value) < 999.5) return `${fixed(value, 0)} B`;
  for (const unit of BYTE_UNITS) {
    value /= 1000;
    if (Math.abs(value) < 999.95 || unit === BYTE_UNITS[BYTE_UNITS.length - 1]) return `${fixed(value, 1)} ${unit}`;
  }
  return null;
}

export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return null;
  const value = Number(seconds);
  if (value === 0) return "0 s";
  const size = Math.abs(value);
  if (size >= 100) return `${fixed(value, 0)} s`;
  if (size >= 9.995) return `${fixed(value, 1)} s`;
  if (size >= 0.00995) return `${fixed(value, 2)} s`;
  if (size >= 0.0009995) return `${fixed(value, 3)} s`;
  return `${fixed(value * 1000, 2)} ms`;
}

export const plural = (count, noun, pluralNoun) => `${count} ${count === 1 ? noun : pluralNoun || `${noun}s`}`;

export function footerItems(usage, timings, status, liveTokens = 0, dtype = null) {
  const items = [];
  const prompt = usage.prompt_tokens;
  if (prompt === undefined) return items;
  items.push(["prompt", plural(prompt, "token")]);
  if (prompt) items.push(["cached", `${usage.cached_tokens} (${fixed((100 * usage.cached_tokens) / prompt, 0)}%)`]);
  items.push(["completion", plural(Math.max(usage.completion_tokens || 0, liveTokens), "token")]);
  if (usage.accepted_draft_tokens != null) items.push(["drafted", `${usage.accepted_draft_tokens} accepted`]);
  const t = timings || {};
  if (t.time_to_first_token != null) items.push(["TTFT", formatSeconds(t.time_to_first_token)]);
  if (t.prefill_tokens_per_second != null) items.push(["prefill", `${fixed(t.prefill_tokens_per_second, 0)} tok/s`]);
  if (t.decode_tokens_per_second != null) items.push(["decode", `${fixed(t.decode_tokens_per_second, 1)} tok/s`]);
  const memory = formatBytes(t.peak_memory);
  if (memory !== null) items.push(["peak memory", memory]);
  if (t.total_seconds != null) items.push(["total", formatSeconds(t.total_seconds)]);
  if (dtype) items.push(["dtype", String(dtype)]);
  if (status) items.push(["finish", status]);
  return items;
}

export function reasoningSummary(tokens, seconds, active = false) {
  const parts = [active ? "Reasoning…" : "Reasoning"];
  if (tokens != null) parts.push(plural(tokens, "token"));
  if (seconds) parts.push(formatSeconds(seconds));
  return parts.join(" · ");
}

export function toolsNotices(offered, unsupported) {
  const names = (offered || []).join(", ");
  return {
    offered: names ? `tools offered: ${names}` : null,
    warning: names && unsupported ? `This model's chat template cannot show tools: the model never saw ${names}.` : null,
  };
}

// ---- Stop ------------------------------------------------------------------------------------
// JupyterLab 4.6 sends widget comm messages over kernel subshells (commsOverSubshells:
// perCommTarget), so the {kind: "stop"} message reaches the kernel while the cell is busy and
// the turn ends normally, keeping its partial reply. Interrupting the kernel would turn the
// user's Stop into a KeyboardInterrupt and a failed cell: it is only the fallback.

export const STOP_GRACE_MS = 2000;

export function stopPlan(kernel, busyInCell) {
  // "message": the message is enough (the turn streams on a thread; the kernel is free).
  // "interrupt": the kernel cannot read comm messages while busy: interrupt at once.
  // "message-then-interrupt": interrupt only if the turn is still streaming after the grace.
  if (!busyInCell || !kernel || typeof kernel.interrupt !== "function") return "message";
  const viaSubshell = kernel.supportsSubshells === true && kernel.commsOverSubshells !== "disabled";
  return viaSubshell ? "message-then-interrupt" : "interrupt";
}

// ---- DOM -------------------------------------------------------------------------------------

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

const STREAMING_PHASES = ["waiting", "prefill", "reasoning", "content", "tool_calls"];

function finalStatus(model) {
  const phase = model.get("phase");
  if (phase === "stopped") return "stopped";
  if (phase === "error") return "error";
  if (phase === "done") {
    const reason = model.get("finish_reason");
    return reason === "cancelled" ? "stopped" : reason || "done";
  }
  return null;
}

function phaseLabel(model) {
  const phase = model.get("phase");
  if (phase === "prefill") {
    const { processed = 0, total = 0 } = model.get("prefill") || {};
    return total ? `reading prompt ${Math.floor((100 * processed) / total)}%` : "reading prompt";
  }
  return { waiting: "waiting", reasoning: "reasoning", content: "writing", tool_calls: "calling tools" }[phase]
    || finalStatus(model) || phase;
}

function toolCard(call) {
  const card = el("div", "mlxnb-tool");
  const title = el("div");
  title.append(el("span", "mlxnb-tool-badge", "tool call"), " ", el("span", "mlxnb-tool-name", call ? call.name : "?"), " ",
    el("span", "mlxnb-tool-id", call ? call.id : ""));
  card.append(title, el("div", "mlxnb-tool-label", "arguments"),
    el("pre", "mlxnb-tool-args", call ? pretty(call.arguments) : ""));
  if (call && call.error != null) {
    card.append(el("div", "mlxnb-tool-label", "error"), el("pre", "mlxnb-tool-error", call.error));
  } else if (call && call.result != null) {
    card.append(el("div", "mlxnb-tool-label", "result"), el("pre", "mlxnb-tool-result", pretty(call.result)));
  } else {
    card.append(el("div", "mlxnb-tool-pending", "waiting for the result…"));
  }
  return card;
}

function initialize({ model }) {
  const store = storeFor(model);
  const resync = () => model.send({ kind: "resync" });
  const onMessage = (msg) => {
    if (!msg || msg.kind !== "delta") return;
    let block = store.blocks[msg.block];
    if (block === undefined) {
      if (msg.block !== store.blocks.length || msg.offset !== 0) return resync();
      block = { kind: msg.channel, text: "", tokens: 0, seconds: 0 };
      store.blocks.push(block);
    }
    if (block.text.length !== msg.offset) return resync();
    block.text += msg.text;
    block.tokens = msg.tokens;
    block.seconds = msg.seconds;
    notify(store);
  };
  const onBlocks = () => {
    store.blocks = structuredClone(model.get("blocks") || []);
    notify(store);
  };
  const onTools = () => {
    // A tool call takes the next block, in step with the kernel's block list.
    const placed = new Set(store.blocks.filter((b) => b.kind === "tool").map((b) => b.id));
    for (const call of model.get("tool_calls") || []) {
      if (!placed.has(call.id)) store.blocks.push({ kind: "tool", id: call.id });
    }
    notify(store);
  };
  model.on("msg:custom", onMessage);
  model.on("change:blocks", onBlocks);
  model.on("change:tool_calls", onTools);
  return () => {
    model.off("msg:custom", onMessage);
    model.off("change:blocks", onBlocks);
    model.off("change:tool_calls", onTools);
    stores.delete(model.get("turn_id"));
  };
}

function render({ model, el: host }) {
  const store = storeFor(model);
  const root = el("div", "mlxnb-turn mlxnb-live");
  const header = el("div", "mlxnb-header");
  const modelName = model.get("model");
  const name = el("span", "mlxnb-model", modelName.replace(/\/+$/, "").split("/").pop() || modelName);
  name.title = modelName;
  const status = el("span", "mlxnb-status");
  const stop = el("button", "mlxnb-stop", "■ Stop");
  stop.title = "Stop generating (cancels the request on the engine)";
  header.append(name, el("span", "mlxnb-session", `session ${model.get("session")}`),
    el("span", "mlxnb-spacer"), status, stop);
  const offeredLine = el("div", "mlxnb-tools-offered");
  const toolsWarning = el("div", "mlxnb-warning");
  const progress = el("div", "mlxnb-progress");
  const bar = el("div", "mlxnb-progress-bar");
  progress.append(bar);
  const body = el("div", "mlxnb-blocks");
  const problems = el("div", "mlxnb-problems");
  const error = el("div", "mlxnb-error");
  const footer = el("div", "mlxnb-footer");
  root.append(header, offeredLine, toolsWarning, progress, body, problems, error, footer);
  host.append(root);

  const drawn = []; // per block: {node, length, kind, userToggled}
  let stopping = false;
  let stopTimer = 0;
  let removed = false;

  const interruptKernel = (kernel) => {
    kernel.interrupt().catch((e) => console.warn("mlx-notebook: interrupt failed", e));
  };
  stop.addEventListener("click", () => {
    if (stopping) return;
    stopping = true;
    stop.disabled = true;
    stop.textContent = "Stopping…";
    model.send({ kind: "stop" });
    const kernel = model.widget_manager && model.widget_manager.kernel;
    const plan = stopPlan(kernel, model.get("stop_interrupts"));
    if (plan === "interrupt") interruptKernel(kernel);
    else if (plan === "message-then-interrupt") {
      stopTimer = setTimeout(() => {
        stopTimer = 0;
        // A view that is gone (the turn ended and its output was replaced) never interrupts:
        // the kernel may be running the next cell by now.
        if (!removed && STREAMING_PHASES.includes(model.get("phase"))) interruptKernel(kernel);
      }, STOP_GRACE_MS);
    }
  });

  function drawBlock(i, block, streaming) {
    let slot = drawn[i];
    if (slot && slot.kind !== block.kind) {
      slot.node.remove();
      slot = undefined;
    }
    if (!slot) {
      let node;
      if (block.kind === "reasoning") {
        node = el("details", "mlxnb-reasoning");
        node.append(el("summary"), el("div", "mlxnb-reasoning-body"));
        node.addEventListener("toggle", () => { if (drawn[i] && drawn[i].programmatic !== node.open) drawn[i].userToggled = true; });
      } else if (block.kind === "content") {
        node = el("div", "mlxnb-content");
      } else {
        node = el("div", "mlxnb-tool-slot");
      }
      slot = { node, length: -1, kind: block.kind, userToggled: false, programmatic: false, key: null };
      drawn[i] = slot;
      body.append(node);
    }
    const active = streaming && i === store.blocks.length - 1;
    if (block.kind === "reasoning") {
      const summary = slot.node.firstChild;
      summary.textContent = reasoningSummary(block.tokens, block.seconds, active);
      if (slot.length !== block.text.length) {
        slot.node.lastChild.textContent = block.text.replace(/^\n+/, "");
        slot.length = block.text.length;
      }
      if (!slot.userToggled && slot.node.open !== active) {
        slot.programmatic = active;
        slot.node.open = active;
      }
    } else if (block.kind === "content") {
      if (slot.length !== block.text.length || slot.active !== active) {
        slot.node.innerHTML = markdown(block.text);
        slot.node.classList.toggle("mlxnb-streaming", active);
        slot.length = block.text.length;
        slot.active = active;
      }
    } else {
      const call = (model.get("tool_calls") || []).find((c) => c.id === block.id);
      const key = JSON.stringify(call || null);
      if (slot.key !== key) {
        slot.node.replaceChildren(toolCard(call));
        slot.key = key;
      }
    }
  }

  let frame = 0;
  function draw() {
    frame = 0;
    const phase = model.get("phase");
    const streaming = !["done", "stopped", "error"].includes(phase);
    store.blocks.forEach((block, i) => drawBlock(i, block, streaming));
    while (drawn.length > store.blocks.length) drawn.pop().node.remove();

    const label = phaseLabel(model);
    status.textContent = label;
    status.className = `mlxnb-status mlxnb-status-${finalStatus(model) || phase}`;
    stop.style.display = streaming ? "" : "none";

    const { processed = 0, total = 0 } = model.get("prefill") || {};
    const showBar = phase === "prefill" && total > 0;
    progress.style.display = showBar ? "" : "none";
    bar.style.width = `${total ? Math.min(100, (100 * processed) / total) : 0}%`;

    problems.replaceChildren(...(model.get("problems") || []).map((p) =>
      el("div", "mlxnb-problem", `⚠ ${p.message}: ${p.text}`)));
    const message = model.get("error");
    error.style.display = message ? "" : "none";
    error.textContent = message ? `Error: ${message}` : "";

    const liveTokens = store.blocks.reduce((n, b) => n + (b.tokens || 0), 0);
    const notices = toolsNotices(model.get("tools_offered"), model.get("tools_unsupported"));
    offeredLine.textContent = notices.offered || "";
    offeredLine.style.display = notices.offered ? "" : "none";
    toolsWarning.textContent = notices.warning ? `⚠ ${notices.warning}` : "";
    toolsWarning.style.display = notices.warning ? "" : "none";

    footer.replaceChildren(...footerItems(model.get("usage") || {}, model.get("timings"), finalStatus(model),
      liveTokens, model.get("model_dtype"))
      .map(([key, value]) => {
        const item = el("span", "mlxnb-stat", `${key} `);
        item.dataset.stat = key;
        item.append(el("b", "", value));
        return item;
      }));
  }
  const schedule = () => { if (!frame) frame = requestAnimationFrame(draw); };

  const traits = ["phase", "prefill", "usage", "timings", "finish_reason", "error", "problems", "tool_calls",
    "tools_offered", "tools_unsupported", "model_dtype"];
  for (const trait of traits) model.on(`change:${trait}`, schedule);
  store.listeners.add(schedule);
  draw();
  return () => {
    for (const trait of traits) model.off(`change:${trait}`, schedule);
    store.listeners.delete(schedule);
    if (frame) cancelAnimationFrame(frame);
    removed = true;
    if (stopTimer) clearTimeout(stopTimer);
  };
}

export default { initialize, render };
