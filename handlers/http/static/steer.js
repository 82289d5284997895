// STUB (web-shell): replaced by web-trace's steering. The contract app.js relies on:
// mountSteering(element, {questId}) -> {close()}.
export function mountSteering(element, { questId }) {
  element.replaceChildren();
  const p = document.createElement("p");
  p.className = "muted";
  p.textContent = `Steering ${questId} (coming).`;
  element.append(p);
  return { close() { element.replaceChildren(); } };
}
