/**
 * Edits drawn before Python answers. A node added from the palette and a wire dropped on a port
 * show at once, as Python will draw them; Python's graph replaces them when it acknowledges the
 * event (a refused wire then disappears, with Python's message in the banner). The canvas only
 * proposes: Python names the node (it keeps the proposed id when it is free) and checks the wire.
 */

import type { Edge } from "@xyflow/react";
import type { CanvasNode } from "./FlowNode";
import { syncEdge } from "./sync";
import type { GraphNode, PaletteEntry, Position } from "./types";

/** About the size of a new node's card, until it is measured. */
export const NEW_CARD = { width: 240, height: 110 };

/** Sent but not acknowledged: added nodes and wires, by the seq of their event. */
export interface Unconfirmed {
  adds: Map<number, CanvasNode>;
  wires: Map<number, Edge>;
}

/** The id Python gives a new node of `type`: its last name part, then `_2`, `_3`… until free. */
export function newNodeId(type: string, taken: Set<string>): string {
  const base = (type.split(".").pop() ?? type).replace(/-/g, "_");
  if (!taken.has(base)) return base;
  let number = 2;
  while (taken.has(`${base}_${number}`)) number += 1;
  return `${base}_${number}`;
}

/** The card of a node just added, or null when the palette carries none for its type. */
export function addedNode(entry: PaletteEntry | undefined, id: string, at: Position): CanvasNode | null {
  if (!entry?.card) return null;
  const node: GraphNode = { ...entry.card, id, label: id, x: at.x, y: at.y };
  // a size up front: React Flow hides a node until it knows one, and measuring waits for a frame
  // that Streamlit's rerun of the parent page (on the same thread) can hold up
  const size = { initialWidth: NEW_CARD.width, initialHeight: NEW_CARD.height };
  return { id, type: "flow", position: at, data: { node, key: `pending:${id}` }, deletable: false, ...size };
}

/** The wire a drop makes, when both ends are ports the cards show (not the `+` that makes one). */
export function droppedWire(
  nodes: CanvasNode[],
  source: string,
  sourceHandle: string,
  target: string,
  targetHandle: string,
): Edge | null {
  const from = nodes.find((n) => n.id === source)?.data.node;
  const to = nodes.find((n) => n.id === target)?.data.node;
  const output = from?.outputs.find((p) => p.name === sourceHandle);
  if (!to || !output || !to.inputs.some((p) => p.name === targetHandle)) return null;
  const id = `${source}.${sourceHandle}->${target}.${targetHandle}`;
  return syncEdge({ id, source, sourceHandle, target, targetHandle, type: output.type, conditional: Boolean(to.when) }, undefined);
}

/** Drop what Python has acknowledged; what is left is still to be drawn on top of its graph. */
export function prune(unconfirmed: Unconfirmed, acked: number): void {
  for (const seq of unconfirmed.adds.keys()) if (seq <= acked) unconfirmed.adds.delete(seq);
  for (const seq of unconfirmed.wires.keys()) if (seq <= acked) unconfirmed.wires.delete(seq);
}

/** Python's nodes plus the added ones it does not know yet (as the canvas last had them). */
export function withAdds(nodes: CanvasNode[], unconfirmed: Unconfirmed, prev: CanvasNode[]): CanvasNode[] {
  if (unconfirmed.adds.size === 0) return nodes;
  const known = new Set(nodes.map((n) => n.id));
  const local = new Map(prev.map((n) => [n.id, n]));
  const extra = [...unconfirmed.adds.values()].filter((n) => !known.has(n.id)).map((n) => local.get(n.id) ?? n);
  return [...nodes, ...extra];
}

/** Python's edges plus the dropped wires, each replacing the wire its input had. */
export function withWires(edges: Edge[], unconfirmed: Unconfirmed): Edge[] {
  if (unconfirmed.wires.size === 0) return edges;
  const wires = [...unconfirmed.wires.values()];
  const fed = new Set(wires.map((w) => `${w.target}.${w.targetHandle}`));
  const kept = edges.filter((e) => e.data?.kind !== "data" || !fed.has(`${e.target}.${e.targetHandle}`));
  const known = new Set(kept.map((e) => e.id));
  return [...kept, ...wires.filter((w) => !known.has(w.id))];
}
