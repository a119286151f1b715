// GeoDiffusion layout editor: runs as gr.HTML's js_on_load (element, props, trigger, watch are given).
// props.value is JSON {"layout": {official layout}, "classes": [...], "marks": [per box: null or why the checkpoint
// refuses it], "readable": false while the layout text cannot be read (the layout is then the last readable one,
// shown faded, and takes no edits), "note": what the marks mean}; the page's Python decides marks (the pipeline's
// checks), this file only draws them. User edits write the value back and fire "input" (not "change", which also
// fires when Python sets the value, and would echo stale layouts back).
const PALETTE = ["#1e76b3", "#ff7e0d", "#2b9f2b", "#1a5e63", "#9366bc", "#8b554a", "#e276c1", "#7e7e7e",
                 "#bbbc21", "#16bdce"];  // no red: red is for marked boxes
const MARKED = "#dc2626";
const MIN_SIZE = 0.01;
let data = { layout: { bbox: [] }, classes: [], marks: [], readable: true, note: "" };
let selected = -1;
let drag = null;
let currentLabel = null;

const q = (sel) => element.querySelector(sel);
const clamp = (v) => Math.min(1, Math.max(0, v));
const round4 = (v) => Math.round(v * 10000) / 10000;

function parse() {
  try {
    const v = JSON.parse(props.value || "{}");
    const layout = v.layout && typeof v.layout === "object" ? v.layout : { bbox: [] };
    if (!Array.isArray(layout.bbox)) layout.bbox = [];
    data = { layout, classes: Array.isArray(v.classes) ? v.classes : [], marks: Array.isArray(v.marks) ? v.marks : [],
             readable: v.readable !== false, note: typeof v.note === "string" ? v.note : "" };
  } catch (e) {
    data = { layout: { bbox: [] }, classes: data.classes, marks: [], readable: true, note: "" };
  }
  if (selected >= data.layout.bbox.length || !data.readable) selected = -1;
}

// A box that can be drawn: [label, x1, y1, x2, y2] with four finite numbers, or texts of them as Python's float()
// reads them (others are left out of the drawing).
const drawable = (b) => Array.isArray(b) && b.length === 5
  && b.slice(1).every((v) => v !== null && String(v).trim() !== "" && isFinite(Number(v)));

function fillSelect() {
  const s = q(".geo-label");
  if (!s) return;
  const keep = currentLabel && data.classes.includes(currentLabel) ? currentLabel : data.classes[0];
  s.innerHTML = "";
  for (const c of data.classes) {
    const o = document.createElement("option");
    o.value = c;
    o.textContent = c;
    s.appendChild(o);
  }
  if (keep) s.value = keep;
  currentLabel = keep || null;
}

function draw() {
  const c = q(".geo-canvas");
  if (!c) return;
  const ctx = c.getContext("2d");
  const W = c.width, H = c.height;
  ctx.fillStyle = "#ffffff";
  ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = "#eeeeee";
  ctx.lineWidth = 1;
  for (let i = 1; i < 8; i++) {
    ctx.beginPath();
    ctx.moveTo((i * W) / 8, 0); ctx.lineTo((i * W) / 8, H);
    ctx.moveTo(0, (i * H) / 8); ctx.lineTo(W, (i * H) / 8);
    ctx.stroke();
  }
  ctx.globalAlpha = data.readable ? 1 : 0.45;
  let drawn = 0;
  const marked = [];
  data.layout.bbox.forEach((b, i) => {
    if (!drawable(b)) return;
    drawn += 1;
    const [label, x1, y1, x2, y2] = [b[0], ...b.slice(1).map(Number)];
    const mark = data.marks[i];
    const col = mark ? MARKED : PALETTE[i % PALETTE.length];
    if (mark) marked.push(`box ${i + 1} (${mark})`);
    ctx.lineWidth = i === selected ? 4 : 2;
    ctx.strokeStyle = col;
    ctx.setLineDash(mark ? [10, 6] : []);
    ctx.strokeRect(x1 * W, y1 * H, (x2 - x1) * W, (y2 - y1) * H);  // as written, so an inverted box shows inverted
    ctx.setLineDash([]);
    ctx.font = "14px sans-serif";
    const text = `${i + 1} ${label}` + (mark ? ` (${mark})` : "");
    const tw = ctx.measureText(text).width + 8;
    const left = Math.min(x1, x2) * W, top = Math.min(y1, y2) * H;
    const ty = top >= 18 ? top - 18 : top;
    ctx.fillStyle = col;
    ctx.fillRect(left, ty, tw, 18);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(text, left + 4, ty + 14);
    if (i === selected) {
      for (const [hx, hy] of [[x1, y1], [x2, y1], [x1, y2], [x2, y2]]) {
        ctx.fillStyle = col;
        ctx.fillRect(hx * W - 6, hy * H - 6, 12, 12);
      }
    }
  });
  ctx.globalAlpha = 1;
  if (!data.readable) {
    ctx.font = "bold 16px sans-serif";
    const text = "Last readable layout";
    ctx.fillStyle = "#334155";
    ctx.fillRect(0, H - 26, ctx.measureText(text).width + 12, 26);
    ctx.fillStyle = "#ffffff";
    ctx.fillText(text, 6, H - 8);
  }
  const boxes = `${drawn} box${drawn === 1 ? "" : "es"}`;
  c.setAttribute("aria-label", data.readable
    ? `Layout canvas: ${boxes}` + (marked.length ? `; marked in dashed red: ${marked.join(", ")}` : "")
    : `Layout canvas: the last readable layout, ${boxes}`);
  const st = q(".geo-status");
  if (st) st.textContent = `${drawn} box(es)` + (selected >= 0 ? `, box ${selected + 1} selected` : "");
  const note = q(".geo-note");
  if (note) {
    note.textContent = data.note;
    note.hidden = !data.note;
  }
  for (const control of element.querySelectorAll(".geo-label, .geo-delete, .geo-clear")) {
    control.disabled = !data.readable;
  }
}

function commit() {
  let v = {};
  try { v = JSON.parse(props.value || "{}"); } catch (e) { v = {}; }
  v.layout = data.layout;
  v.classes = data.classes;
  v.marks = data.marks;
  props.value = JSON.stringify(v);
  trigger("input");
}

function pointer(ev) {
  const r = q(".geo-canvas").getBoundingClientRect();
  return [clamp((ev.clientX - r.left) / r.width), clamp((ev.clientY - r.top) / r.height)];
}

function hit(x, y) {
  const width = q(".geo-canvas").getBoundingClientRect().width || 512;
  const tol = 10 / width;
  const boxes = data.layout.bbox;
  const order = selected >= 0 ? [selected, ...boxes.keys()] : [...boxes.keys()].reverse();
  for (const i of order) {
    const [, x1, y1, x2, y2] = boxes[i];
    const corners = { tl: [x1, y1], tr: [x2, y1], bl: [x1, y2], br: [x2, y2] };
    for (const [name, [cx, cy]] of Object.entries(corners)) {
      if (Math.abs(x - cx) <= tol && Math.abs(y - cy) <= tol) return { i, mode: name };
    }
  }
  for (let i = boxes.length - 1; i >= 0; i--) {
    const [, x1, y1, x2, y2] = boxes[i];
    if (x >= x1 && x <= x2 && y >= y1 && y <= y2) return { i, mode: "move" };
  }
  return null;
}

function normalise(b) {
  const [label, a, bb, c, d] = b;
  return [label, round4(Math.min(a, c)), round4(Math.min(bb, d)), round4(Math.max(a, c)), round4(Math.max(bb, d))];
}

element.addEventListener("pointerdown", (ev) => {
  if (!ev.target.classList || !ev.target.classList.contains("geo-canvas") || !data.readable) return;
  ev.preventDefault();
  ev.target.setPointerCapture && ev.target.setPointerCapture(ev.pointerId);
  ev.target.focus();
  const [x, y] = pointer(ev);
  const h = hit(x, y);
  if (h) {
    selected = h.i;
    drag = { mode: h.mode, i: h.i, x, y, orig: data.layout.bbox[h.i].slice() };
  } else {
    const label = currentLabel || data.classes[0] || "car";
    data.layout.bbox.push([label, x, y, x, y]);
    data.marks.length = data.layout.bbox.length - 1;  // a mark per box before it, then none for the new one
    data.marks.push(null);
    selected = data.layout.bbox.length - 1;
    drag = { mode: "br", i: selected, x, y, orig: [label, x, y, x, y], fresh: true };
  }
  draw();
});

element.addEventListener("pointermove", (ev) => {
  if (!drag) return;
  const [x, y] = pointer(ev);
  const [label, x1, y1, x2, y2] = drag.orig;
  let b;
  if (drag.mode === "move") {
    const dx = Math.min(Math.max(x - drag.x, -x1), 1 - x2);
    const dy = Math.min(Math.max(y - drag.y, -y1), 1 - y2);
    b = [label, x1 + dx, y1 + dy, x2 + dx, y2 + dy];
  } else {
    b = [label, x1, y1, x2, y2];
    if (drag.mode.includes("l")) b[1] = x; else b[3] = x;
    if (drag.mode.includes("t")) b[2] = y; else b[4] = y;
  }
  data.layout.bbox[drag.i] = b;
  draw();
});

function finish() {
  if (!drag) return;
  const b = normalise(data.layout.bbox[drag.i]);
  const moved = JSON.stringify(b) !== JSON.stringify(normalise(drag.orig));
  if (b[3] - b[1] < MIN_SIZE || b[4] - b[2] < MIN_SIZE) {
    if (drag.fresh) { removeBox(drag.i); }
    else data.layout.bbox[drag.i] = normalise(drag.orig);
  } else {
    data.layout.bbox[drag.i] = b;
  }
  const changed = moved && !(drag.fresh && selected < 0);
  drag = null;
  draw();
  if (changed) commit();
}
element.addEventListener("pointerup", finish);
element.addEventListener("pointercancel", finish);

function removeBox(i) {
  data.layout.bbox.splice(i, 1);
  data.marks.splice(i, 1);
  selected = -1;
}

element.addEventListener("keydown", (ev) => {
  if ((ev.key === "Delete" || ev.key === "Backspace") && selected >= 0 && ev.target.classList.contains("geo-canvas")) {
    ev.preventDefault();
    removeBox(selected);
    draw();
    commit();
  }
});

element.addEventListener("click", (ev) => {
  if (!ev.target.classList || !data.readable) return;
  if (ev.target.classList.contains("geo-delete") && selected >= 0) {
    removeBox(selected);
    draw();
    commit();
  } else if (ev.target.classList.contains("geo-clear") && data.layout.bbox.length) {
    data.layout.bbox = [];
    data.marks = [];
    selected = -1;
    draw();
    commit();
  }
});

element.addEventListener("change", (ev) => {
  if (!ev.target.classList || !ev.target.classList.contains("geo-label") || !data.readable) return;
  currentLabel = ev.target.value;
  if (selected >= 0) {
    data.layout.bbox[selected][0] = currentLabel;
    draw();
    commit();
  }
});

parse();
fillSelect();
draw();
if (typeof watch === "function") {
  watch("value", () => {
    if (drag) return;
    parse();
    fillSelect();
    draw();
  });
}
