/**
 * Streamlit's component protocol (API version 1), spoken over postMessage.
 *
 * This replaces streamlit-component-lib, which pins React 16 and bundles Apache Arrow.
 * Streamlit sends `streamlit:render` with the Python arguments; the component answers
 * with `streamlit:componentReady`, `streamlit:setComponentValue` and `streamlit:setFrameHeight`.
 */

export type RenderArgs = Record<string, unknown>;

let latest: RenderArgs | null = null;
const listeners = new Set<() => void>();

function send(type: string, data: Record<string, unknown>): void {
  window.parent.postMessage({ isStreamlitMessage: true, type, ...data }, "*");
}

function onMessage(event: MessageEvent): void {
  if (event.source !== window.parent) return;
  const data = event.data as { type?: unknown; args?: RenderArgs; theme?: unknown } | null;
  if (data?.type !== "streamlit:render") return;
  if (latest === null) performance.mark("canvas:args"); // for benchmarks: when the first graph came
  latest = { ...(data.args ?? {}), streamlitTheme: data.theme ?? null };
  listeners.forEach((listener) => listener());
}

/** Start listening for render messages and tell Streamlit the component is ready. */
export function connectToStreamlit(): void {
  window.addEventListener("message", onMessage);
  send("streamlit:componentReady", { apiVersion: 1 });
}

/** For `useSyncExternalStore`: called whenever new arguments arrive. */
export function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The arguments of the latest render message, or null before the first one. */
export function renderArgs(): RenderArgs | null {
  return latest;
}

export function setComponentValue(value: unknown): void {
  send("streamlit:setComponentValue", { value, dataType: "json" });
}

export function setFrameHeight(height: number): void {
  send("streamlit:setFrameHeight", { height });
}
