// The page's one way to call the daemon: api(path, {method, body}) -> parsed JSON.
// It adds the token; on a 401 it asks for the token once (one dialog however many calls
// were refused at the same time), keeps it in sessionStorage for the tab, and retries.
// A refusal becomes an ApiError carrying the daemon's structured {code, message}.

const KEY = "ds-events.token";

export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.name = "ApiError";
    this.status = status;   // HTTP status (0: the daemon could not be reached)
    this.code = code;       // the stable error code, e.g. "unknown_node"
    this.detail = detail;   // the whole error body
  }
}

/** The token kept for this tab ("" when none was asked for). */
export function token() {
  return sessionStorage.getItem(KEY) || "";
}

/** Headers every /api request carries (the token, when there is one). */
export function authHeaders() {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

let asking = null;

/** Ask for the token (once for concurrent callers); resolves when one is entered. */
export function askToken(reason = "This daemon needs a token.") {
  if (!asking) asking = showDialog(reason).finally(() => { asking = null; });
  return asking;
}

/** Call a daemon route; resolves to its JSON, rejects with an ApiError. */
export async function api(path, { method = "GET", body, signal } = {}) {
  for (;;) {
    const headers = { Accept: "application/json", ...authHeaders() };
    const init = { method, headers, signal };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (err) {
      if (err.name === "AbortError") throw err;
      throw new ApiError(0, "unreachable", `the daemon did not answer: ${err.message}`, null);
    }
    if (resp.status === 401) {
      const had = token();
      if (had) sessionStorage.removeItem(KEY);
      await askToken(had ? "That token was refused; enter the daemon's token." : "This daemon needs a token.");
      continue;
    }
    const text = await resp.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch { data = null; }
    if (!resp.ok) {
      throw new ApiError(resp.status, data?.error || "http_error", data?.message || `${resp.status} ${resp.statusText}`, data);
    }
    return data;
  }
}

function showDialog(reason) {
  const dialog = document.getElementById("token-dialog");
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  document.getElementById("token-reason").textContent = reason;
  input.value = "";
  return new Promise((resolve) => {
    const done = (ev) => {
      ev.preventDefault();
      const value = input.value.trim();
      if (!value) return;
      sessionStorage.setItem(KEY, value);
      form.removeEventListener("submit", done);
      dialog.close();
      resolve(value);
    };
    form.addEventListener("submit", done);
    // Escape would close the dialog with nothing entered: keep asking instead.
    dialog.addEventListener("cancel", (ev) => ev.preventDefault(), { once: true });
    if (!dialog.open) dialog.showModal();
    input.focus();
  });
}
