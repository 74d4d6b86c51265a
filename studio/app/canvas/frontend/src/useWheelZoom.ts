/**
 * The mouse wheel zooms in small steps: at most `WHEEL_STEP` per wheel event, about the pointer,
 * however far one notch scrolls (React Flow's own step grows with the wheel's delta: 1.15x for 100
 * pixels, 2x or more for a fast or coarse wheel). A pinch (a wheel event with Ctrl) and the minimap
 * keep React Flow's handling; a card's scrolling part (`nowheel`) scrolls.
 */

import type { ReactFlowInstance, Edge } from "@xyflow/react";
import { useEffect, type RefObject } from "react";
import type { CanvasNode } from "./FlowNode";

/** The largest zoom change of one wheel event. */
export const WHEEL_STEP = 1.1;
/** React Flow's default most zoom. */
const MAX_ZOOM = 2;
/** Pixels of a line and of a page, for wheels that count in those (Firefox counts lines). */
const LINE = 20;
const PAGE = 400;

/** The zoom factor of one wheel event: 2^(-pixels/500), as React Flow's, kept within 1/WHEEL_STEP..WHEEL_STEP. */
export function wheelFactor(event: Pick<WheelEvent, "deltaY" | "deltaMode">): number {
  const pixels = event.deltaY * (event.deltaMode === 1 ? LINE : event.deltaMode === 2 ? PAGE : 1);
  const limit = Math.log2(WHEEL_STEP);
  return 2 ** Math.min(limit, Math.max(-limit, -pixels * 0.002));
}

export function useWheelZoom(pane: RefObject<HTMLDivElement>, flow: ReactFlowInstance<CanvasNode, Edge>, minZoom: number): void {
  useEffect(() => {
    const element = pane.current;
    if (!element) return;
    const onWheel = (event: WheelEvent) => {
      const target = event.target instanceof Element ? event.target : null;
      if (event.ctrlKey || !target?.closest(".react-flow") || target.closest(".nowheel, .react-flow__minimap, .react-flow__controls")) return;
      event.preventDefault();
      event.stopPropagation();
      const { x, y, zoom } = flow.getViewport();
      const next = Math.min(MAX_ZOOM, Math.max(minZoom, zoom * wheelFactor(event)));
      if (next === zoom) return;
      const box = (element.querySelector(".react-flow") ?? element).getBoundingClientRect();
      const px = event.clientX - box.left;
      const py = event.clientY - box.top;
      void flow.setViewport({ x: px - ((px - x) * next) / zoom, y: py - ((py - y) * next) / zoom, zoom: next });
    };
    element.addEventListener("wheel", onWheel, { capture: true, passive: false });
    return () => element.removeEventListener("wheel", onWheel, { capture: true });
  }, [pane, flow, minZoom]);
}
