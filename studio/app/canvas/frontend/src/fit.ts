/**
 * The opening view: a small flow (up to 15 nodes besides the inputs and outputs) at a readable
 * zoom (at most 100%; at least 75%, or down to 55% when that makes it whole, as in a 1024 px
 * window), its start at the left when it is still wider than the pane; a bigger one fitted whole
 * (`openingViewport`, as the trace view opens), or, in the editor, at a readable zoom on its start
 * (`startViewport`).
 */

import type { Rect, Viewport } from "@xyflow/react";

export const READABLE_UP_TO = 15 + 2;
export const READABLE_ZOOM = 0.75;
/** The least zoom a small flow opens at to be whole in a narrow pane (16 px text stays 8.8 px). */
export const NARROW_ZOOM = 0.55;
const MAX_ZOOM = 1;
/** Far enough out that a 500-node flow fits whole. */
export const MIN_ZOOM = 0.02;
/**
 * The margins of the opening view: wider on the left, where the zoom buttons sit, so no card opens
 * under them; studio/editor/layout.py's READABLE_VIEW counts on these.
 */
const MARGIN = { left: 48, right: 24, top: 24, bottom: 24 };

/**
 * The least zoom a big flow opens at in the editor: a card's smallest text (12 px) stays 8.4 px on
 * screen, where fitting a 200-node flow whole would show it as a dotted line.
 */
export const BIG_FLOW_ZOOM = 0.7;

type Pane = { width: number; height: number };

/** From `start` (the pane's margin) of `length`, the flow coordinate the view begins at so that it
 * shows `[from, from + size)` of `extent` (`[lo, lo + span)`): that centred when the view is wider
 * than the extent, else `from`'s centre in the middle, kept inside the extent. */
function viewStart(lo: number, span: number, from: number, size: number, length: number): number {
  if (span <= length) return lo - (length - span) / 2;
  return Math.min(Math.max(from + size / 2 - length / 2, lo), lo + span - length);
}

/**
 * A big flow in the editor: as wide as the pane shows (its layout is cut into rows as wide as a
 * readable view, studio/editor/layout.py's `in_rows`), at a zoom from `BIG_FLOW_ZOOM` to 100%, the
 * view on its `start` (the flow's inputs), kept inside the flow.
 */
export function startViewport(bounds: Rect, pane: Pane, start: Rect | null): Viewport {
  const room = { width: pane.width - MARGIN.left - MARGIN.right, height: pane.height - MARGIN.top - MARGIN.bottom };
  const zoom = Math.min(MAX_ZOOM, Math.max(BIG_FLOW_ZOOM, room.width / Math.max(bounds.width, 1)));
  const from = start ?? { x: bounds.x, y: bounds.y, width: 0, height: 0 };
  const left = viewStart(bounds.x, bounds.width, from.x, from.width, room.width / zoom);
  const top = viewStart(bounds.y, bounds.height, from.y, from.height, room.height / zoom);
  return { x: MARGIN.left - left * zoom, y: MARGIN.top - top * zoom, zoom };
}

/**
 * The row width (canvas pixels) a big flow needs to open whole across this pane at
 * `READABLE_ZOOM`, when its rows (`bounds`) are too wide to show whole even at `BIG_FLOW_ZOOM` (a
 * 1024 px window); null when they fit. Python then lays the rows out again (studio/editor/editor.py,
 * `fit_rows`).
 */
export function narrowerRows(bounds: Rect, pane: Pane): number | null {
  const room = pane.width - MARGIN.left - MARGIN.right;
  return bounds.width * BIG_FLOW_ZOOM > room + 1 ? Math.floor(room / READABLE_ZOOM) : null;
}

export function openingViewport(bounds: Rect, pane: Pane, count: number): Viewport {
  const room = { width: pane.width - MARGIN.left - MARGIN.right, height: pane.height - MARGIN.top - MARGIN.bottom };
  const fitted = Math.min(room.width / Math.max(bounds.width, 1), room.height / Math.max(bounds.height, 1));
  const zoom = Math.min(MAX_ZOOM, count <= READABLE_UP_TO ? Math.max(fitted >= NARROW_ZOOM ? NARROW_ZOOM : READABLE_ZOOM, fitted) : Math.max(MIN_ZOOM, fitted));
  const width = bounds.width * zoom;
  const height = bounds.height * zoom;
  const x = MARGIN.left + (width <= room.width ? (room.width - width) / 2 : 0);
  const y = MARGIN.top + (height <= room.height ? (room.height - height) / 2 : 0);
  return { x: x - bounds.x * zoom, y: y - bounds.y * zoom, zoom };
}
