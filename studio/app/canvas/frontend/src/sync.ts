/**
 * Python's graph → React Flow's nodes and edges, keeping what is local: measured sizes always,
 * positions and selection until Python says otherwise, and moves Python has not acknowledged yet
 * (so a rerun that started before a drag ended does not make the node jump back). Unchanged
 * objects are reused so the memoised node cards do not re-render on every Streamlit rerun.
 */

import type { Edge } from "@xyflow/react";
import { portColor } from "./colors";
import type { CanvasNode } from "./FlowNode";
import type { Graph, GraphEdge, GraphNode, Position } from "./types";

export interface SyncRules {
  /** A new version: positions come from Python (except unacknowledged moves). */
  fresh: boolean;
  /** Python's `selected` changed, or a new version, and no select event is pending: selection comes from Python. */
  pythonSelects: boolean;
  /** Positions sent in move events Python has not acknowledged yet. */
  moves: Map<string, Position>;
}

function nodeKey(node: GraphNode): string {
  const { x: _x, y: _y, ...rest } = node;
  return JSON.stringify(rest);
}

function position(node: GraphNode, prev: CanvasNode | undefined, rules: SyncRules): Position {
  const moved = rules.moves.get(node.id);
  if (moved) return moved;
  if (prev && !rules.fresh) return prev.position;
  if (prev && prev.position.x === node.x && prev.position.y === node.y) return prev.position;
  return { x: node.x, y: node.y };
}

function syncNode(node: GraphNode, prev: CanvasNode | undefined, graph: Graph, rules: SyncRules): CanvasNode {
  const key = nodeKey(node);
  const data = prev && prev.data.key === key ? prev.data : { node, key };
  const where = position(node, prev, rules);
  const selected = prev && !rules.pythonSelects ? Boolean(prev.selected) : node.id === graph.selected;
  if (prev && prev.data === data && prev.position === where && Boolean(prev.selected) === selected) return prev;
  return { id: node.id, type: "flow", position: where, data, selected, measured: prev?.measured, deletable: false };
}

export function syncNodes(graph: Graph, prev: CanvasNode[], rules: SyncRules): CanvasNode[] {
  const byId = new Map(prev.map((node) => [node.id, node]));
  return graph.nodes.map((node) => syncNode(node, byId.get(node.id), graph, rules));
}

function sameEdge(edge: GraphEdge, prev: Edge): boolean {
  return (
    prev.source === edge.source &&
    prev.target === edge.target &&
    prev.sourceHandle === edge.sourceHandle &&
    prev.targetHandle === edge.targetHandle &&
    prev.data?.type === (edge.type ?? "any") &&
    prev.data?.kind === (edge.kind ?? "data") &&
    prev.data?.conditional === Boolean(edge.conditional)
  );
}

const GUARD_COLOR = "#d97706";
const AFTER_COLOR = "#94a3b8";

/** Data wires in their type's colour; conditional ones (into a guarded node) dashed; guard and `after` links apart. */
function edgeLook(edge: GraphEdge): Pick<Edge, "type" | "style" | "label" | "className" | "animated"> {
  const kind = edge.kind ?? "data";
  if (kind === "guard") {
    return { type: "link", style: { stroke: GUARD_COLOR, strokeDasharray: "6 4" }, label: "when", className: "fc-edge-guard" };
  }
  if (kind === "after") {
    return { type: "link", style: { stroke: AFTER_COLOR, strokeDasharray: "2 4" }, label: "after", className: "fc-edge-after" };
  }
  const stroke = portColor(edge.type ?? "any");
  if (edge.conditional) return { style: { stroke, strokeDasharray: "6 4" }, className: "fc-edge-conditional" };
  return { style: { stroke } };
}

export function syncEdge(edge: GraphEdge, prev: Edge | undefined): Edge {
  if (prev && sameEdge(edge, prev)) return prev;
  const type = edge.type ?? "any";
  return {
    id: edge.id,
    source: edge.source,
    sourceHandle: edge.sourceHandle,
    target: edge.target,
    targetHandle: edge.targetHandle,
    selected: prev?.selected ?? false,
    deletable: false,
    selectable: (edge.kind ?? "data") === "data",
    data: { type, kind: edge.kind ?? "data", conditional: Boolean(edge.conditional) },
    ...edgeLook(edge),
  };
}

export function syncEdges(graph: Graph, prev: Edge[]): Edge[] {
  const byId = new Map(prev.map((edge) => [edge.id, edge]));
  return graph.edges.map((edge) => syncEdge(edge, byId.get(edge.id)));
}
