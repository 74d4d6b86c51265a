/**
 * The canvas's local nodes and edges, kept in step with Python's graph (see sync.ts), plus the
 * bookkeeping that decides when Python's positions, selection and fit request apply.
 */

import { applyEdgeChanges, applyNodeChanges, type Edge, type EdgeChange, type NodeChange } from "@xyflow/react";
import { useCallback, useLayoutEffect, useRef, useState } from "react";
import type { EventQueue } from "./events";
import type { CanvasNode } from "./FlowNode";
import { prune, withAdds, withWires, type Unconfirmed } from "./optimistic";
import { syncEdges, syncNodes } from "./sync";
import type { Graph, Position } from "./types";

interface Seen {
  version: number | null;
  selected: string | null;
  fit: boolean;
}

/** What is sent but not yet acknowledged: move positions and the last select event. */
export interface Pending {
  moves: Map<string, { seq: number; at: Position }>;
  selectSeq: number;
  /** The selected node as the canvas last knew it (sent or received); select events are sent on change. */
  selected: string | null;
}

function wantsFit(graph: Graph, seen: Seen): boolean {
  return graph.fit && (seen.version === null || !seen.fit || graph.version < seen.version);
}

function pendingMoves(pending: Pending, acked: number): Map<string, Position> {
  for (const [id, move] of pending.moves) if (move.seq <= acked) pending.moves.delete(id);
  return new Map([...pending.moves].map(([id, move]) => [id, move.at]));
}

function withoutRemovals<T extends { type: string }>(changes: T[]): T[] {
  return changes.filter((change) => change.type !== "remove");
}

export function useGraphState(graph: Graph, queue: EventQueue) {
  const [nodes, setNodes] = useState<CanvasNode[]>([]);
  const [edges, setEdges] = useState<Edge[]>([]);
  const seen = useRef<Seen>({ version: null, selected: null, fit: false });
  const pending = useRef<Pending>({ moves: new Map(), selectSeq: 0, selected: null });
  const fitRequested = useRef(false);
  const unconfirmed = useRef<Unconfirmed>({ adds: new Map(), wires: new Map() });

  useLayoutEffect(() => {
    queue.ack(graph.ack, graph.ack_session);
    const fresh = seen.current.version !== graph.version;
    const selectPending = pending.current.selectSeq > queue.acked;
    const pythonSelects = !selectPending && (fresh || seen.current.selected !== graph.selected);
    if (wantsFit(graph, seen.current)) fitRequested.current = true;
    if (pythonSelects) pending.current.selected = graph.selected;
    seen.current = { version: graph.version, selected: graph.selected, fit: graph.fit };
    const rules = { fresh, pythonSelects, moves: pendingMoves(pending.current, queue.acked) };
    prune(unconfirmed.current, queue.acked);
    setNodes((prev) => withAdds(syncNodes(graph, prev, rules), unconfirmed.current, prev));
    setEdges((prev) => withWires(syncEdges(graph, prev), unconfirmed.current));
  }, [graph, queue]);

  /** Draw a node or a wire the event `seq` asks Python for, until Python's graph acknowledges it. */
  const addLocally = useCallback((seq: number, node: CanvasNode) => {
    unconfirmed.current.adds.set(seq, node);
    setNodes((prev) => withAdds(prev, unconfirmed.current, prev));
  }, []);
  const wireLocally = useCallback((seq: number, edge: Edge) => {
    unconfirmed.current.wires.set(seq, edge);
    setEdges((prev) => withWires(prev, unconfirmed.current));
  }, []);

  const onNodesChange = useCallback(
    (changes: NodeChange<CanvasNode>[]) => setNodes((prev) => applyNodeChanges(withoutRemovals(changes), prev)),
    [],
  );
  const onEdgesChange = useCallback(
    (changes: EdgeChange<Edge>[]) => setEdges((prev) => applyEdgeChanges(withoutRemovals(changes), prev)),
    [],
  );
  const unconfirmedCount = unconfirmed.current.adds.size + unconfirmed.current.wires.size;
  return { nodes, edges, onNodesChange, onEdgesChange, pending, fitRequested, addLocally, wireLocally, unconfirmedCount };
}
