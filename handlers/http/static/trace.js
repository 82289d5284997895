// STUB (web-shell): replaced by web-trace's live trace. The contract app.js relies on:
// mountTrace(element, {questId}) -> {close()}.
export function mountTrace(element, { questId }) {
  element.replaceChildren();
  const p = document.createElement("p");
  p.className = "muted";
  p.textContent = `Live trace of ${questId} (coming).`;
  element.append(p);
  return { close() { element.replaceChildren(); } };
}
