/** Entry point: wire Streamlit's render messages to the canvas. */

import { useEffect, useMemo, useRef, useSyncExternalStore } from "react";
import { createRoot } from "react-dom/client";
import "@xyflow/react/dist/style.css";
import "./canvas.css";
import { Canvas } from "./Canvas";
import { EventQueue } from "./events";
import { connectToStreamlit, renderArgs, setFrameHeight, subscribe } from "./streamlit";
import { readGraph } from "./types";

const DEFAULT_HEIGHT = 640;

function App() {
  const args = useSyncExternalStore(subscribe, renderArgs);
  const queue = useRef<EventQueue | null>(null);
  queue.current ??= new EventQueue();
  const graph = useMemo(() => readGraph(args?.graph), [args]);
  const height = typeof args?.height === "number" ? args.height : DEFAULT_HEIGHT;
  useEffect(() => setFrameHeight(height), [height]);
  if (!args) return null;
  return (
    <div style={{ height }}>
      <Canvas graph={graph} queue={queue.current} />
    </div>
  );
}

const root = document.getElementById("root");
if (root) createRoot(root).render(<App />);
connectToStreamlit();
