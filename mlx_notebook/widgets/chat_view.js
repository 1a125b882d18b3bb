// Front end of mlx_notebook.widgets.ChatView: one chat turn, streamed.
//
// The kernel makes every piece of HTML (Markdown, tool cards, notices, footer items) with
// the renderer of the saved output, mlx_notebook.display; this module only places it, keeps
// the reasoning panel's open state, draws the progress bar and sends Stop.
// While the model writes, the kernel sends {kind: "delta", block, channel, tokens, seconds,
// footer} custom messages (coalesced to <= 20/s): reasoning as new text {offset, text,
// summary}, content as the Markdown blocks that changed {keep, html} (keep the first `keep`
// blocks, then append `html`). Everything else is synced traits. Deltas are accumulated once
// per model (in `initialize`), so every view of the turn, even one opened mid-stream, draws
// the same reply. A view that sees a gap asks for {kind: "resync"}.

const stores = new Map(); // turn_id -> {blocks, footer, listeners}

function storeFor(model) {
  const id = model.get("turn_id");
  let store = stores.get(id);
  if (!store) {
    store = { blocks: structuredClone(model.get("blocks") || []), footer: model.get("footer") || [],
      listeners: new Set() };
    stores.set(id, store);
  }
  return store;
}

function notify(store) {
  for (const listener of store.listeners) listener();
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

const STREAMING_PHASES = ["waiting", "prefill", "reasoning", "content", "tool_calls"];

function phaseLabel(model) {
  const phase = model.get("phase");
  if (phase === "prefill") {
    const { processed = 0, total = 0 } = model.get("prefill") || {};
    return total ? `reading prompt ${Math.floor((100 * processed) / total)}%` : "reading prompt";
  }
  return { waiting: "waiting", reasoning: "reasoning", content: "writing", tool_calls: "calling tools" }[phase]
    || model.get("status") || phase;
}

function initialize({ model }) {
  const store = storeFor(model);
  const resync = () => model.send({ kind: "resync" });
  const onMessage = (msg) => {
    if (!msg || msg.kind !== "delta") return;
    const content = msg.channel === "content";
    let block = store.blocks[msg.block];
    if (block === undefined) {
      if (msg.block !== store.blocks.length || (content ? msg.keep : msg.offset) !== 0) return resync();
      block = content ? { kind: "content", html: [] } : { kind: "reasoning", text: "", summary: "" };
      store.blocks.push(block);
    }
    if (content) {
      if (block.html.length < msg.keep) return resync();
      block.html = block.html.slice(0, msg.keep).concat(msg.html);
    } else {
      if (block.text.length !== msg.offset) return resync();
      block.text += msg.text;
      block.summary = msg.summary;
    }
    block.tokens = msg.tokens;
    block.seconds = msg.seconds;
    store.footer = msg.footer;
    notify(store);
  };
  const onBlocks = () => {
    store.blocks = structuredClone(model.get("blocks") || []);
    notify(store);
  };
  const onFooter = () => {
    store.footer = model.get("footer") || [];
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
  model.on("change:footer", onFooter);
  return () => {
    model.off("msg:custom", onMessage);
    model.off("change:blocks", onBlocks);
    model.off("change:tool_calls", onTools);
    model.off("change:footer", onFooter);
    stores.delete(model.get("turn_id"));
  };
}

function render({ model, el: host }) {
  const store = storeFor(model);
  const root = el("div", "mlxnb-turn mlxnb-live");
  const header = el("div", "mlxnb-header");
  const modelName = model.get("model");
  // <bdi>: a name with right-to-left marks must not reorder the rest of the header
  const name = el("span", "mlxnb-model");
  name.append(el("bdi", "", modelName.replace(/\/+$/, "").split("/").pop() || modelName));
  name.title = modelName;
  const session = el("span", "mlxnb-session", "session ");
  session.append(el("bdi", "", model.get("session")));
  const status = el("span", "mlxnb-status");
  const stop = el("button", "mlxnb-stop", "■ Stop");
  stop.title = "Stop generating (cancels the request on the engine)";
  header.append(name, session,
    el("span", "mlxnb-spacer"), status, stop);
  const notices = el("div", "mlxnb-notices");
  const progress = el("div", "mlxnb-progress");
  const bar = el("div", "mlxnb-progress-bar");
  progress.append(bar);
  const body = el("div", "mlxnb-blocks");
  const problems = el("div", "mlxnb-problems");
  const error = el("div", "mlxnb-error");
  const footer = el("div", "mlxnb-footer");
  root.append(header, notices, progress, body, problems, error, footer);
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
      slot.node.firstChild.textContent = block.summary || "Reasoning";
      slot.node.classList.toggle("mlxnb-active", active);
      if (slot.length !== block.text.length) {
        slot.node.lastChild.textContent = block.text.replace(/^\n+/, "");
        slot.length = block.text.length;
      }
      if (!slot.userToggled && slot.node.open !== active) {
        slot.programmatic = active;
        slot.node.open = active;
      }
    } else if (block.kind === "content") {
      const html = (block.html || []).join("");
      if (slot.key !== html) {
        slot.node.innerHTML = html;  // made by the kernel's renderer, reply text escaped
        slot.key = html;
      }
      if (slot.active !== active) {
        slot.node.classList.toggle("mlxnb-streaming", active);
        slot.active = active;
      }
    } else {
      const html = (model.get("tool_cards") || {})[block.id] || "";
      if (slot.key !== html) {
        slot.node.innerHTML = html;
        slot.key = html;
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
    status.className = `mlxnb-status mlxnb-status-${model.get("status") || phase}`;
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

    const noticesHtml = model.get("notices") || "";
    if (notices.innerHTML !== noticesHtml) notices.innerHTML = noticesHtml;

    footer.replaceChildren(...(store.footer || []).map(([key, value]) => {
        const item = el("span", "mlxnb-stat", `${key} `);
        item.dataset.stat = key;
        item.append(el("b", "", value));
        return item;
      }));
  }
  const schedule = () => { if (!frame) frame = requestAnimationFrame(draw); };

  const traits = ["phase", "status", "prefill", "error", "problems", "tool_cards", "notices"];
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
