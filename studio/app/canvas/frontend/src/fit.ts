/**
 * The opening view: a small flow (up to 15 nodes besides the inputs and outputs) at a readable
 * zoom (at most 100%; at least 75%, or down to 55% when that makes it whole, as in a 1024 px
 * window), its start at the left when it is still wider than the pane; a bigger one fitted whole.
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

export function openingViewport(bounds: Rect, pane: { width: number; height: number }, count: number): Viewport {
  const room = { width: pane.width - MARGIN.left - MARGIN.right, height: pane.height - MARGIN.top - MARGIN.bottom };
  const fitted = Math.min(room.width / Math.max(bounds.width, 1), room.height / Math.max(bounds.height, 1));
  const zoom = Math.min(MAX_ZOOM, count <= READABLE_UP_TO ? Math.max(fitted >= NARROW_ZOOM ? NARROW_ZOOM : READABLE_ZOOM, fitted) : Math.max(MIN_ZOOM, fitted));
  const width = bounds.width * zoom;
  const height = bounds.height * zoom;
  const x = MARGIN.left + (width <= room.width ? (room.width - width) / 2 : 0);
  const y = MARGIN.top + (height <= room.height ? (room.height - height) / 2 : 0);
  return { x: x - bounds.x * zoom, y: y - bounds.y * zoom, zoom };
}
