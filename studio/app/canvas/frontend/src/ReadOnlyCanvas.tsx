/**
 * The canvas read-only (the Traces page): the editor's node cards, coloured by status, that can
 * be panned, zoomed and clicked but not dragged, connected, deleted or edited. A click sends a
 * `select` event, the only event it sends.
 */

import { Background, Controls, MiniMap, ReactFlow, ReactFlowProvider, useNodesInitialized, useReactFlow, type Edge, type OnSelectionChangeParams } from "@xyflow/react";
import { useCallback, useEffect, useRef } from "react";
import { STATUS_COLORS } from "./colors";
import type { EventQueue } from "./events";
import { EDGE_TYPES } from "./LinkEdge";
import { FlowNode, type CanvasNode } from "./FlowNode";
import { MIN_ZOOM, READABLE_UP_TO, openingViewport } from "./fit";
import "./readonly.css";
import type { Graph } from "./types";
import { useGraphState } from "./useGraphState";

const NODE_TYPES = { flow: FlowNode };
/** From this many nodes only those on screen are drawn (as in the editor). */
const VISIBLE_ONLY_FROM = 100;
/** A minimap from this many nodes (the inputs and outputs included: a smaller run fits the pane readably) up to the limit, where redrawing it costs too much. */
const MINIMAP_FROM = 30;
const MINIMAP_LIMIT = 300;

interface Props {
  graph: Graph;
  queue: EventQueue;
  dark: boolean;
}

function statusColor(node: CanvasNode): string {
  const { status } = node.data.node;
  return status ? STATUS_COLORS[status] : "#e5e7eb";
}

export function ReadOnlyCanvas(props: Props) {
  return (
    <ReactFlowProvider>
      <Viewer {...props} />
    </ReactFlowProvider>
  );
}

function Viewer({ graph, queue, dark }: Props) {
  const flow = useReactFlow<CanvasNode, Edge>();
  const pane = useRef<HTMLDivElement>(null);
  const state = useGraphState(graph, queue);
  const { nodes, edges, pending, fitRequested } = state;
  const initialized = useNodesInitialized();

  useEffect(() => {
    if (!fitRequested.current || !initialized || nodes.length === 0) return;
    fitRequested.current = false;
    const rect = pane.current?.getBoundingClientRect();
    if (!rect) return;
    // the whole run in view (the editor instead opens a small flow at a readable zoom, its start at the left)
    const whole = Math.max(nodes.length, READABLE_UP_TO + 1);
    void flow.setViewport(openingViewport(flow.getNodesBounds(nodes.map((n) => n.id)), rect, whole));
  }, [initialized, nodes, flow, fitRequested]);

  const onSelectionChange = useCallback(
    ({ nodes: chosen }: OnSelectionChangeParams) => {
      const node = chosen[0]?.id ?? null;
      if (node === null || node === pending.current.selected) return; // a click on the pane keeps the page's node
      pending.current.selected = node;
      pending.current.selectSeq = queue.push({ kind: "select", node });
    },
    [queue, pending],
  );

  return (
    <div
      className={`fc-root fc-readonly${dark ? " fc-dark" : ""}`}
      data-testid="canvas-root"
      data-readonly="true"
      data-version={graph.version}
      data-nodes={nodes.length}
      data-edges={edges.length}
      data-theme={dark ? "dark" : "light"}
    >
      <div className="fc-main">
        <div className="fc-canvas" ref={pane}>
          <ReactFlow<CanvasNode, Edge>
            nodes={nodes}
            edges={edges}
            nodeTypes={NODE_TYPES}
            edgeTypes={EDGE_TYPES}
            onNodesChange={state.onNodesChange}
            onSelectionChange={onSelectionChange}
            nodesDraggable={false}
            nodesConnectable={false}
            edgesFocusable={false}
            elementsSelectable
            selectNodesOnDrag={false}
            multiSelectionKeyCode={null}
            selectionKeyCode={null}
            deleteKeyCode={null}
            colorMode={dark ? "dark" : "light"}
            onlyRenderVisibleElements={nodes.length > VISIBLE_ONLY_FROM}
            minZoom={MIN_ZOOM}
            attributionPosition="top-right"
          >
            <Background gap={20} size={1} />
            <Controls showInteractive={false} />
            {nodes.length >= MINIMAP_FROM && nodes.length <= MINIMAP_LIMIT ? <MiniMap pannable zoomable nodeColor={statusColor} /> : null}
          </ReactFlow>
        </div>
      </div>
    </div>
  );
}
