/** Entry point: wire Streamlit's render messages to the canvas. */

import { useEffect, useMemo, useRef, useState, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import "@xyflow/react/dist/style.css";
import "./canvas.css";
import { Canvas } from "./Canvas";
import { ReadOnlyCanvas } from "./ReadOnlyCanvas";
import { EventQueue } from "./events";
import { connectToStreamlit, renderArgs, setFrameHeight, subscribe } from "./streamlit";
import { readGraph } from "./types";

const DEFAULT_HEIGHT = 640;
/** Room left under the canvas when it fills the window, so the page itself never scrolls. */
const BOTTOM_GAP = 16;

/**
 * With `fill`, the frame reaches from where it starts to the bottom of the browser window (the
 * Streamlit page is the same origin), and follows the window's size; `height` is the least.
 */
function useFilledHeight(least: number, fill: boolean): number {
  const measure = () => {
    try {
      const frame = window.frameElement;
      if (!fill || !frame) return least;
      const top = frame.getBoundingClientRect().top + (window.parent.scrollY ?? 0);
      return Math.max(least, Math.floor(window.parent.innerHeight - top - BOTTOM_GAP));
    } catch {
      return least;
    }
  };
  const [height, setHeight] = useState(measure);
  useEffect(() => {
    setHeight(measure());
    if (!fill) return;
    const onResize = () => setHeight(measure());
    const timer = window.setInterval(onResize, 1000); // the page above may grow or shrink (a message, a toolbar line)
    try {
      window.parent.addEventListener("resize", onResize);
    } catch {
      /* not reachable: keep the fixed height */
    }
    return () => {
      window.clearInterval(timer);
      try {
        window.parent.removeEventListener("resize", onResize);
      } catch {
        /* as above */
      }
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [least, fill]);
  return fill ? height : least; // not filling: the height asked for from the first render (a fit then sees the right pane)
}

function isDark(theme: unknown): boolean {
  return typeof theme === "object" && theme !== null && (theme as { base?: unknown }).base === "dark";
}

function App() {
  const args = useSyncExternalStore(subscribe, renderArgs);
  const queue = useRef<EventQueue | null>(null);
  queue.current ??= new EventQueue();
  const graph = useMemo(() => readGraph(args?.graph), [args]);
  const least = typeof args?.height === "number" ? args.height : DEFAULT_HEIGHT;
  const height = useFilledHeight(least, args?.fill === true);
  useEffect(() => setFrameHeight(height), [height]);
  if (!args) return null;
  return (
    <div style={{ height }}>
      {args.readonly === true ? (
        <ReadOnlyCanvas graph={graph} queue={queue.current} dark={isDark(args.streamlitTheme)} />
      ) : (
        <Canvas graph={graph} queue={queue.current} dark={isDark(args.streamlitTheme)} />
      )}
    </div>
  );
}

performance.mark("canvas:script"); // for benchmarks: when the bundle started running
const root = document.getElementById("root");
if (root) createRoot(root).render(<App />);
connectToStreamlit();
