/**
 * The editor: palette, toolbar and the React Flow canvas. It holds no flow logic: every edit is
 * an event for Python, which answers with a new graph version.
 */

import {
  Background,
  Controls,
  MiniMap,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  type Connection,
  type Edge,
  type OnNodeDrag,
  type OnSelectionChangeParams,
  type Viewport,
} from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState, type DragEvent, type MouseEvent } from "react";
import { NodeActionsContext } from "./actions";
import { Banner } from "./Banner";
import { ContextMenu, type MenuAt } from "./ContextMenu";
import { STATUS_COLORS } from "./colors";
import type { EventQueue } from "./events";
import { EDGE_TYPES } from "./LinkEdge";
import { FlowNode, type CanvasNode } from "./FlowNode";
import { DRAG_TYPE, Palette } from "./Palette";
import { Toolbar } from "./Toolbar";
import { SPECIAL_NODES, type Graph, type Position } from "./types";
import { useGraphState } from "./useGraphState";
import { useKeyboard } from "./useKeyboard";
import { addedNode, droppedWire, NEW_CARD, newNodeId } from "./optimistic";
import { BIG_FLOW_ZOOM, MIN_ZOOM, READABLE_UP_TO } from "./fit";
import { useOpeningView } from "./useOpeningView";
import { useWheelZoom } from "./useWheelZoom";

const NODE_TYPES = { flow: FlowNode };
/** From this many nodes only those on screen are drawn. */
const VISIBLE_ONLY_FROM = 100;
/** From this many nodes (the inputs and outputs included) a readable zoom no longer shows them all: a minimap helps. */
const MINIMAP_FROM = 8;
/**
 * Small, so that it hides little of the flow (its corner is where a wrapped flow ends): about
 * 150x100 px, shaped like the flow, so that a big flow wrapped into rows (tall and narrow) gets a
 * tall, narrow one whose strip can still be dragged, not a 6 px sliver.
 */
const MINIMAP_AREA = 150 * 100;
const MINIMAP_WIDTH = { least: 60, most: 200 };
const MINIMAP_HEIGHT = { least: 80, most: 200 };

function clamp(value: number, range: { least: number; most: number }): number {
  return Math.round(Math.min(range.most, Math.max(range.least, value)));
}

/** The minimap's box for a flow whose cards span `width` x `height` canvas pixels. */
export function minimapStyle(width: number, height: number): { width: number; height: number } {
  const aspect = Math.max(height, 1) / Math.max(width, 1);
  const across = clamp(Math.sqrt(MINIMAP_AREA / aspect), MINIMAP_WIDTH);
  return { width: across, height: clamp(across * aspect, MINIMAP_HEIGHT) };
}
/** How long after an add a resize of the pane still re-shows the new card. */
const SETTLE_MS = 3000;
const MENU_SIZE = { width: 200, height: 170 };
/** How far a pasted or duplicated node lands from its original. */
const COPY_OFFSET = 40;
/** The node list starts open in a canvas at least this wide (a 1024 px window's is not: the flow gets its room). */
const PALETTE_OPENS_FROM = 800;
const FIT_OPTIONS = { padding: 0.15, maxZoom: 1.25, minZoom: MIN_ZOOM };

function minimapColor(node: CanvasNode): string {
  const { status, errors } = node.data.node;
  if (errors?.length) return STATUS_COLORS.failed;
  return status ? STATUS_COLORS[status] : "#9ca3af";
}

interface Props {
  graph: Graph;
  queue: EventQueue;
  dark: boolean;
}

export function Canvas(props: Props) {
  return (
    <ReactFlowProvider>
      <Editor {...props} />
    </ReactFlowProvider>
  );
}

function rounded(at: Position): Position {
  return { x: Math.round(at.x), y: Math.round(at.y) };
}

const GAP = 24;

/** A new card's room: the largest card a palette type gets (an LLM node's, with its error line), so it never lands half outside or on another. */
const ROOM = { width: 380, height: 200 };

interface Area {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * A spot for a new node: the free one nearest `start` (the centre of the view, or beside the
 * selected node) that lies inside the `visible` part of the canvas, not under the minimap (`hidden`);
 * else the free one nearest it
 * (a big flow's rows leave no room between cards: beside the row's end); else the first free one
 * scanning right, then down (the view then widens or moves to show it).
 */
function freeSpot(start: Position, nodes: CanvasNode[], visible: Area | null, hidden: Area | null = null): Position {
  const overlaps = (at: Position) =>
    nodes.some((n) => {
      const width = n.measured?.width ?? NEW_CARD.width;
      const height = n.measured?.height ?? NEW_CARD.height;
      return (
        at.x < n.position.x + width + GAP &&
        n.position.x < at.x + ROOM.width + GAP &&
        at.y < n.position.y + height + GAP &&
        n.position.y < at.y + ROOM.height + GAP
      );
    });
  const underHidden = (at: Position) =>
    hidden !== null &&
    at.x < hidden.x + hidden.width && hidden.x < at.x + ROOM.width && at.y < hidden.y + hidden.height && hidden.y < at.y + ROOM.height;
  const inside = (at: Position) =>
    !visible ||
    (at.x >= visible.x && at.y >= visible.y && at.x + ROOM.width <= visible.x + visible.width && at.y + ROOM.height <= visible.y + visible.height && !underHidden(at));
  const around = (steps: number) => {
    const near: Position[] = [];
    for (let row = -steps; row <= steps; row++) {
      for (let column = -steps; column <= steps; column++) near.push({ x: start.x + column * (GAP * 3), y: start.y + row * (GAP * 3) });
    }
    return near.sort((a, b) => Math.hypot(a.x - start.x, a.y - start.y) - Math.hypot(b.x - start.x, b.y - start.y));
  };
  const found = around(6).find((at) => inside(at) && !overlaps(at)) ?? around(20).find((at) => !overlaps(at));
  if (found) return rounded(found);
  for (let row = 0; row < 8; row++) {
    for (let column = 0; column < 20; column++) {
      const spot = { x: start.x + column * (ROOM.width + GAP), y: start.y + row * (ROOM.height / 2) };
      if (!overlaps(spot)) return rounded(spot);
    }
  }
  return rounded(start);
}

/** Where the minimap covers the canvas, in flow coordinates (a new card is not put under it); null without one. */
function minimapArea(flow: ReturnType<typeof useReactFlow<CanvasNode, Edge>>, pane: HTMLElement | null): Area | null {
  const box = pane?.querySelector(".react-flow__minimap")?.getBoundingClientRect();
  if (!box) return null;
  const topLeft = flow.screenToFlowPosition({ x: box.left - GAP, y: box.top - GAP });
  const bottomRight = flow.screenToFlowPosition({ x: box.right, y: box.bottom });
  return { x: topLeft.x, y: topLeft.y, width: bottomRight.x - topLeft.x, height: bottomRight.y - topLeft.y };
}

/** The view moved as little as it takes to show `card` whole (a margin of `GAP` screen pixels), at its zoom. */
function shiftedTo(card: Area, view: Viewport, topLeft: Position, bottomRight: Position): Viewport {
  const margin = GAP / view.zoom;
  const shift = (lo: number, hi: number, from: number, to: number) =>
    from < lo + margin ? from - lo - margin : to > hi - margin ? Math.min(to - hi + margin, from - lo - margin) : 0;
  const dx = shift(topLeft.x, bottomRight.x, card.x, card.x + card.width);
  const dy = shift(topLeft.y, bottomRight.y, card.y, card.y + card.height);
  return { x: view.x - dx * view.zoom, y: view.y - dy * view.zoom, zoom: view.zoom };
}

/** Node ids copied with Ctrl/Cmd+C, for Ctrl/Cmd+V (within this canvas: the flow text is Python's). */
let clipboard: string[] = [];

function Editor({ graph, queue, dark }: Props) {
  const flow = useReactFlow<CanvasNode, Edge>();
  const pane = useRef<HTMLDivElement>(null);
  const dragStart = useRef(new Map<string, Position>());
  const state = useGraphState(graph, queue);
  const { nodes, edges, pending, fitRequested } = state;
  const askRows = useCallback((width: number) => void queue.push({ kind: "rows", width }), [queue]);
  useOpeningView(flow, pane, nodes, fitRequested, askRows);
  useWheelZoom(pane, flow, MIN_ZOOM);

  const { onNodesChange } = state;
  /** "Go to node": the view centred on it (at a readable zoom at least) and it alone selected, which opens its Inspector. */
  const goTo = useCallback(
    (id: string) => {
      const node = flow.getInternalNode(id);
      if (!node) return;
      const { x, y } = node.internals.positionAbsolute;
      const width = node.measured.width ?? NEW_CARD.width;
      const height = node.measured.height ?? NEW_CARD.height;
      void flow.setCenter(x + width / 2, y + height / 2, { zoom: Math.max(flow.getZoom(), BIG_FLOW_ZOOM) });
      const changed = flow.getNodes().filter((n) => Boolean(n.selected) !== (n.id === id));
      onNodesChange(changed.map((n) => ({ id: n.id, type: "select", selected: n.id === id })));
    },
    [flow, onNodesChange],
  );
  const minimap = useMemo(() => {
    const xs = graph.nodes.map((n) => n.x);
    const ys = graph.nodes.map((n) => n.y);
    const width = Math.max(...xs) - Math.min(...xs) + NEW_CARD.width;
    return minimapStyle(width, Math.max(...ys) - Math.min(...ys) + NEW_CARD.height);
  }, [graph.nodes]);
  const idList = nodes.map((n) => n.id).join("\n");
  const nodeIds = useMemo(() => (idList ? idList.split("\n") : []), [idList]);

  const { addLocally, wireLocally } = state;
  /** The spot of the node last added from the palette, while the frame may still resize after it. */
  const lastAdded = useRef<{ at: Position; until: number } | null>(null);
  /** A new node's free spot can be off screen (a crowded flow): zoom out just enough to show it
   * beside what was on screen, rather than move the view away from it; where that would make a big
   * flow's cards unreadable (its rows), keep the zoom and move the view onto the new card. */
  const widenTo = useCallback(
    (at: Position, rect: DOMRect) => {
      const topLeft = flow.screenToFlowPosition({ x: rect.left, y: rect.top });
      const bottomRight = flow.screenToFlowPosition({ x: rect.right, y: rect.bottom });
      const right = at.x + ROOM.width;
      const bottom = at.y + ROOM.height;
      if (at.x >= topLeft.x && at.y >= topLeft.y && right <= bottomRight.x && bottom <= bottomRight.y) return;
      const x = Math.min(topLeft.x, at.x);
      const y = Math.min(topLeft.y, at.y);
      const bounds = { x, y, width: Math.max(bottomRight.x, right) - x, height: Math.max(bottomRight.y, bottom) - y };
      const zoom = flow.getZoom();
      const widened = zoom * Math.min((bottomRight.x - topLeft.x) / bounds.width, (bottomRight.y - topLeft.y) / bounds.height) * 0.98;
      const big = flow.getNodes().length > READABLE_UP_TO; // a small flow is shown whole, as it opens
      if (!big || widened >= Math.min(zoom, BIG_FLOW_ZOOM)) void flow.fitBounds(bounds, { padding: 0.02 });
      else {
        const minimap = minimapArea(flow, pane.current);  // the card is moved into view left of it
        const shown = minimap ? { x: Math.min(bottomRight.x, minimap.x), y: bottomRight.y } : bottomRight;
        void flow.setViewport(shiftedTo({ x: at.x, y: at.y, ...ROOM }, flow.getViewport(), topLeft, shown));
      }
    },
    [flow],
  );
  /** Ask Python for the node and draw it at once (see optimistic.ts). */
  const placeNode = useCallback(
    (type: string, at: Position) => {
      const id = newNodeId(type, new Set(flow.getNodes().map((n) => n.id)));
      const seq = queue.push({ kind: "add_node", type, ...at, id });
      const node = addedNode(graph.palette.find((entry) => entry.type === type), id, at);
      if (node) addLocally(seq, node);
    },
    [flow, queue, graph.palette, addLocally],
  );

  const addNode = useCallback(
    (type: string) => {
      const rect = pane.current?.getBoundingClientRect();
      if (!rect) return;
      const centre = flow.screenToFlowPosition({ x: rect.left + rect.width / 2, y: rect.top + rect.height / 2 });
      const topLeft = flow.screenToFlowPosition({ x: rect.left, y: rect.top });
      const bottomRight = flow.screenToFlowPosition({ x: rect.right, y: rect.bottom });
      const visible = { x: topLeft.x, y: topLeft.y, width: bottomRight.x - topLeft.x, height: bottomRight.y - topLeft.y };
      const all = flow.getNodes();
      const selected = all.find((n) => n.selected && !SPECIAL_NODES.has(n.id));
      const start = selected
        ? { x: selected.position.x + (selected.measured?.width ?? NEW_CARD.width) + GAP * 2, y: selected.position.y }
        : { x: centre.x - ROOM.width / 2, y: centre.y - ROOM.height / 2 };
      const at = freeSpot(start, all, visible, minimapArea(flow, pane.current));
      placeNode(type, at);
      widenTo(at, rect);
      lastAdded.current = { at, until: Date.now() + SETTLE_MS };
    },
    [flow, placeNode, widenTo],
  );
  /** Streamlit can resize the canvas frame just after an add (the Inspector opens beside it): the new
   * card is then shown again in the pane as it became. */
  useEffect(() => {
    const element = pane.current;
    if (!element) return;
    const observer = new ResizeObserver(() => {
      const added = lastAdded.current;
      if (added && Date.now() < added.until) widenTo(added.at, element.getBoundingClientRect());
    });
    observer.observe(element);
    return () => observer.disconnect();
  }, [widenTo]);

  const onDragOver = useCallback((event: DragEvent) => {
    if (!event.dataTransfer.types.includes(DRAG_TYPE)) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  }, []);

  const onDrop = useCallback(
    (event: DragEvent) => {
      const type = event.dataTransfer.getData(DRAG_TYPE);
      if (!type) return;
      event.preventDefault();
      placeNode(type, rounded(flow.screenToFlowPosition({ x: event.clientX, y: event.clientY })));
    },
    [flow, placeNode],
  );

  const onConnect = useCallback(
    (c: Connection) => {
      const { source, target } = c;
      const sourceHandle = c.sourceHandle ?? "";
      const targetHandle = c.targetHandle ?? "";
      const seq = queue.push({ kind: "connect", source, sourceHandle, target, targetHandle });
      const wire = droppedWire(flow.getNodes(), source, sourceHandle, target, targetHandle);
      if (wire) wireLocally(seq, wire);
    },
    [flow, queue, wireLocally],
  );

  const onSelectionChange = useCallback(
    ({ nodes: chosen }: OnSelectionChangeParams) => {
      const node = chosen[0]?.id ?? null;
      if (node === pending.current.selected) return;
      pending.current.selected = node;
      pending.current.selectSeq = queue.push({ kind: "select", node });
    },
    [queue, pending],
  );

  const onNodeDragStart = useCallback<OnNodeDrag<CanvasNode>>((_event, _node, dragged) => {
    dragStart.current = new Map(dragged.map((n) => [n.id, n.position]));
  }, []);

  const onNodeDragStop = useCallback<OnNodeDrag<CanvasNode>>(
    (_event, _node, dragged) => {
      const moved = dragged.filter((n) => {
        const start = dragStart.current.get(n.id);
        return !start || start.x !== n.position.x || start.y !== n.position.y;
      });
      if (moved.length === 0) return;
      const positions = Object.fromEntries(moved.map((n) => [n.id, rounded(n.position)]));
      const seq = queue.push({ kind: "move", positions });
      for (const [id, at] of Object.entries(positions)) pending.current.moves.set(id, { seq, at });
    },
    [queue, pending],
  );

  const selectedNodes = nodes.filter((n) => n.selected && !SPECIAL_NODES.has(n.id)).map((n) => n.id);
  const selectedEdges = edges.filter((e) => e.selected).map((e) => e.id);
  const canDelete = selectedNodes.length + selectedEdges.length > 0;

  /** Copies go just below their originals (the tallest one's height), so neither hides the other. */
  const duplicate = (ids: string[]) => {
    if (ids.length === 0) return;
    const tallest = Math.max(0, ...nodes.filter((n) => ids.includes(n.id)).map((n) => n.measured?.height ?? 0));
    queue.push({ kind: "duplicate", nodes: ids, dx: COPY_OFFSET, dy: Math.round(tallest) + COPY_OFFSET / 2 });
  };
  const actions = {
    onDelete: () => canDelete && queue.push({ kind: "delete", nodes: selectedNodes, edges: selectedEdges }),
    onUndo: () => graph.can_undo && queue.push({ kind: "undo" }),
    onRedo: () => graph.can_redo && queue.push({ kind: "redo" }),
    onSave: () => queue.push({ kind: "save" }),
    onCopy: () => {
      clipboard = selectedNodes;
    },
    onPaste: () => duplicate(clipboard.filter((id) => nodes.some((n) => n.id === id))),
    onDuplicate: () => duplicate(selectedNodes),
  };
  useKeyboard(actions);
  const onFit = useCallback(() => void flow.fitView(FIT_OPTIONS), [flow]);

  const [menu, setMenu] = useState<MenuAt | null>(null);
  const onNodeContextMenu = useCallback((event: MouseEvent, node: CanvasNode) => {
    if (SPECIAL_NODES.has(node.id)) return;
    event.preventDefault();
    const rect = pane.current?.getBoundingClientRect();
    const x = event.clientX - (rect?.left ?? 0);
    const y = event.clientY - (rect?.top ?? 0);
    const width = rect?.width ?? Infinity;
    const height = rect?.height ?? Infinity;
    // kept inside the pane: opened leftwards or upwards near its right or bottom edge
    setMenu({ node: node.data.node, x: x + MENU_SIZE.width > width ? x - MENU_SIZE.width : x, y: y + MENU_SIZE.height > height ? y - MENU_SIZE.height : y });
  }, []);
  const nodeActions = useMemo(() => ({ openFlow: (path: string) => queue.push({ kind: "open_flow", path }) }), [queue]);
  const [paletteOpen, setPaletteOpen] = useState(() => window.innerWidth >= PALETTE_OPENS_FROM);

  return (
    <NodeActionsContext.Provider value={nodeActions}>
    <div
      className={`fc-root${dark ? " fc-dark" : ""}`}
      data-testid="canvas-root"
      data-version={graph.version}
      data-nodes={nodes.length}
      data-edges={edges.length}
      data-unconfirmed={state.unconfirmedCount}
      data-theme={dark ? "dark" : "light"}
    >
      {paletteOpen ? <Palette entries={graph.palette} onAdd={addNode} /> : null}
      <div className="fc-main">
        <Toolbar
          paletteOpen={paletteOpen}
          onTogglePalette={() => setPaletteOpen((open) => !open)}
          canUndo={graph.can_undo}
          canRedo={graph.can_redo}
          canDelete={canDelete}
          onUndo={actions.onUndo}
          onRedo={actions.onRedo}
          onDelete={actions.onDelete}
          onFit={onFit}
          onTidy={() => queue.push({ kind: "tidy" })}
          nodeIds={nodeIds}
          onGoTo={goTo}
        />
        <div className="fc-canvas" ref={pane} onDragOver={onDragOver} onDrop={onDrop}>
          <ReactFlow<CanvasNode, Edge>
            nodes={nodes}
            edges={edges}
            nodeTypes={NODE_TYPES}
            edgeTypes={EDGE_TYPES}
            onNodesChange={state.onNodesChange}
            onEdgesChange={state.onEdgesChange}
            onConnect={onConnect}
            onSelectionChange={onSelectionChange}
            onNodeDragStart={onNodeDragStart}
            onNodeDragStop={onNodeDragStop}
            onNodeContextMenu={onNodeContextMenu}
            onPaneClick={() => setMenu(null)}
            colorMode={dark ? "dark" : "light"}
            deleteKeyCode={null}
            onlyRenderVisibleElements={nodes.length > VISIBLE_ONLY_FROM}
            minZoom={MIN_ZOOM}
            attributionPosition="top-right"
          >
            <Background gap={20} size={1} />
            <Controls showInteractive={false} />
            {nodes.length >= MINIMAP_FROM ? <MiniMap pannable zoomable nodeColor={minimapColor} style={minimap} maskStrokeColor="#2563eb" maskStrokeWidth={2} /> : null}
          </ReactFlow>
          <Banner message={graph.message} ack={graph.ack} />
          {menu ? (
            <ContextMenu
              at={menu}
              onClose={() => setMenu(null)}
              onDuplicate={() => duplicate([menu.node.id])}
              onDelete={() => queue.push({ kind: "delete", nodes: [menu.node.id], edges: [] })}
              onCopy={() => {
                clipboard = [menu.node.id];
              }}
              onOpenFlow={menu.node.subflow ? () => nodeActions.openFlow(menu.node.subflow ?? "") : null}
            />
          ) : null}
        </div>
      </div>
    </div>
    </NodeActionsContext.Provider>
  );
}
