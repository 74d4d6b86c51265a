/** The graph Python sends, and the events the canvas sends back. */

/** `reused`: a rerun copied the step from its parent run (the Traces page). */
export type Status = "pending" | "running" | "succeeded" | "failed" | "skipped" | "waiting" | "cached" | "reused";

export interface InputPort {
  name: string;
  type: string;
  required?: boolean;
  wired?: boolean;
}

export interface OutputPort {
  name: string;
  type: string;
}

export interface GraphNode {
  id: string;
  kind: "node" | "inputs" | "outputs";
  type: string;
  label: string;
  x: number;
  y: number;
  inputs: InputPort[];
  outputs: OutputPort[];
  status?: Status | null;
  errors?: string[];
  add_port?: boolean;
  /** The node's `description:`, shown under its header. */
  description?: string;
  /** The model alias an LLM node uses (`default` when the file names none). */
  model?: string | null;
  /** The node's `when:` guard expression. */
  when?: string | null;
  /** A sub-flow file the node runs (flow.call, control.map, control.loop), relative to the flow. */
  subflow?: string | null;
  /** During or after a run from the editor: the text the node streamed or produced (its end). */
  preview?: string | null;
  /** Why the node's step failed in that run. */
  run_error?: string | null;
  /** On a trace: the node the failure points at as its likely cause. */
  cause?: boolean;
}

/** `data`: a wire; `guard`: what a `when:` reads → the guarded node; `after`: an ordering-only dependency. */
export type EdgeKind = "data" | "guard" | "after";

export interface GraphEdge {
  id: string;
  source: string;
  sourceHandle: string;
  target: string;
  targetHandle: string;
  type?: string;
  kind?: EdgeKind;
  /** A wire into a guarded node: it carries a value only when the guard holds. */
  conditional?: boolean;
}

export interface PaletteEntry {
  type: string;
  category: string;
  description: string;
  /** The card a node of this type gets when added (no id, no place): drawn before Python answers. */
  card?: Omit<GraphNode, "x" | "y"> | null;
}

export interface Message {
  level: "error" | "info";
  text: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  palette: PaletteEntry[];
  selected: string | null;
  message: Message | null;
  version: number;
  ack: number;
  /** Optional: the session `ack` belongs to; an ack for another session (an earlier mount) is ignored. */
  ack_session: string | null;
  can_undo: boolean;
  can_redo: boolean;
  fit: boolean;
}

export type Position = { x: number; y: number };

export type CanvasEvent =
  | { kind: "add_node"; type: string; x: number; y: number; id?: string }
  | { kind: "connect"; source: string; sourceHandle: string; target: string; targetHandle: string }
  | { kind: "delete"; nodes: string[]; edges: string[] }
  | { kind: "move"; positions: Record<string, Position> }
  | { kind: "select"; node: string | null }
  | { kind: "undo" }
  | { kind: "redo" }
  | { kind: "save" }
  | { kind: "tidy" }
  | { kind: "rows"; width: number }
  | { kind: "duplicate"; nodes: string[]; dx: number; dy: number }
  | { kind: "open_flow"; path: string };

/** The special nodes that stand for the flow's inputs and outputs: never deleted. */
export const SPECIAL_NODES = new Set(["$inputs", "$outputs"]);

/** The hidden target handle that guard and `after` edges enter. */
export const GUARD_HANDLE = "$when";

/** Fill in whatever the Python side left out, so the rest of the code can trust the shape. */
export function readGraph(raw: unknown): Graph {
  const g = (raw ?? {}) as Partial<Graph>;
  return {
    nodes: g.nodes ?? [],
    edges: g.edges ?? [],
    palette: g.palette ?? [],
    selected: g.selected ?? null,
    message: g.message ?? null,
    version: g.version ?? 0,
    ack: g.ack ?? 0,
    ack_session: g.ack_session ?? null,
    can_undo: g.can_undo ?? false,
    can_redo: g.can_redo ?? false,
    fit: g.fit ?? false,
  };
}
