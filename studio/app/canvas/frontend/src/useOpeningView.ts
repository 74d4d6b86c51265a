/**
 * The opening view (fit.ts) of a flow just opened or tidied, set once React Flow holds its cards
 * measured; set again when the pane changes size before the user moves the view (Streamlit sizes a
 * new canvas frame after its first draw, so a view set then would fit a pane that is not yet there).
 * A big flow whose rows are wider than the pane shows (a narrow window) asks Python for rows as wide
 * as the pane, once per mount (`onNarrow`).
 */

import { useNodesInitialized, type Edge, type ReactFlowInstance, type Viewport } from "@xyflow/react";
import { useCallback, useEffect, useRef, type MutableRefObject, type RefObject } from "react";
import { narrowerRows, openingViewport, READABLE_UP_TO, startViewport } from "./fit";
import type { CanvasNode } from "./FlowNode";

/** The flow's inputs card: where a big flow opens. */
const INPUTS = "$inputs";

type Flow = ReactFlowInstance<CanvasNode, Edge>;

/**
 * Whether React Flow holds every node as drawn now, measured: just after another flow opens, its
 * store can still hold the last flow's cards, and under the same ids (`c0`...) their places and
 * sizes would set the new flow's opening view.
 */
function measuredAsDrawn(flow: Flow, nodes: CanvasNode[]): boolean {
  return nodes.every((n) => {
    const held = flow.getInternalNode(n.id);
    return held?.measured.width !== undefined && held.position.x === n.position.x && held.position.y === n.position.y;
  });
}

function openingView(flow: Flow, pane: DOMRect): Viewport {
  const ids = flow.getNodes().map((n) => n.id);
  const bounds = flow.getNodesBounds(ids);
  const start = ids.includes(INPUTS) ? flow.getNodesBounds([INPUTS]) : null;
  return ids.length > READABLE_UP_TO ? startViewport(bounds, pane, start) : openingViewport(bounds, pane, ids.length);
}

function same(a: Viewport, b: Viewport): boolean {
  return Math.abs(a.x - b.x) < 0.5 && Math.abs(a.y - b.y) < 0.5 && Math.abs(a.zoom - b.zoom) < 1e-4;
}

export function useOpeningView(
  flow: Flow,
  pane: RefObject<HTMLDivElement>,
  nodes: CanvasNode[],
  requested: MutableRefObject<boolean>,
  onNarrow: (width: number) => void,
): void {
  const initialized = useNodesInitialized();
  /** The opening view last set, while the user has not moved away from it. */
  const opened = useRef<Viewport | null>(null);
  /** Whether narrower rows were asked for (once: Python lays a flow out again only as it opened). */
  const asked = useRef(false);
  /** The row width asked for, until Python's rows come: they open again then. */
  const awaited = useRef<number | null>(null);

  const open = useCallback(
    (rect: DOMRect) => {
      opened.current = openingView(flow, rect);
      void flow.setViewport(opened.current);
      const ids = flow.getNodes().map((n) => n.id);
      const width = ids.length > READABLE_UP_TO && !asked.current ? narrowerRows(flow.getNodesBounds(ids), rect) : null;
      if (width !== null) {
        asked.current = true;
        awaited.current = width;
        onNarrow(width);
      }
    },
    [flow, onNarrow],
  );

  useEffect(() => {
    if (awaited.current !== null && initialized && nodes.length > 0 && measuredAsDrawn(flow, nodes)) {
      const rows = flow.getNodesBounds(nodes.map((n) => n.id));
      if (rows.width <= awaited.current + 1) {
        awaited.current = null;
        requested.current = true;
      }
    }
    if (!requested.current || !initialized || nodes.length === 0 || !measuredAsDrawn(flow, nodes)) return;
    requested.current = false;
    const rect = pane.current?.getBoundingClientRect();
    if (rect) open(rect);
  }, [initialized, nodes, flow, requested, pane, open]);

  useEffect(() => {
    const element = pane.current;
    if (!element) return;
    const observer = new ResizeObserver(() => {
      if (!opened.current) return;
      if (!same(flow.getViewport(), opened.current)) {
        opened.current = null; // the user's view now: kept
        return;
      }
      open(element.getBoundingClientRect());
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [flow, pane, open]);
}
