// Small DOM helpers shared by the page's modules (text is always set as text, never HTML).

/** h("div.card", {title: "x", onclick}, child, "text", ...) -> an element. */
export function h(tag, attrs = {}, ...children) {
  const [name, ...classes] = tag.split(".");
  const el = document.createElement(name || "div");
  if (classes.length) el.className = classes.join(" ");
  setAttrs(el, attrs);
  appendAll(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** The same for SVG elements. */
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  appendAll(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function appendAll(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** "3 min ago" for an RFC 3339 time (the full time goes in a title attribute). */
export function ago(ts, now = Date.now()) {
  if (!ts) return "never";
  const then = Date.parse(ts);
  if (Number.isNaN(then)) return ts;
  const s = Math.max(0, Math.round((now - then) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

/** Run fn now and every `ms` while the tab is visible; returns a stop function. */
export function every(ms, fn) {
  let timer = null;
  let stopped = false;
  const tick = async () => {
    timer = null;
    if (stopped) return;
    if (document.visibilityState !== "hidden") {
      try { await fn(); } catch (err) { console.warn(err); }
    }
    if (!stopped) timer = setTimeout(tick, ms);
  };
  const wake = () => { if (!stopped && document.visibilityState === "visible" && timer) { clearTimeout(timer); tick(); } };
  document.addEventListener("visibilitychange", wake);
  tick();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
    document.removeEventListener("visibilitychange", wake);
  };
}

/** An error box for an ApiError (code and message) or any other error. */
export function errorBox(err) {
  return h("p.error", { role: "alert" }, err.code ? h("code", {}, err.code) : null, err.code ? " " : null, err.message || String(err));
}
