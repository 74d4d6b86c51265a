/** Colours for port types and run statuses. */

import type { Status } from "./types";

const TYPE_HUES: Record<string, number> = { str: 212, int: 28, float: 46, bool: 330, list: 150, dict: 268 };

function hashHue(name: string): number {
  let hash = 0;
  for (const char of name) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return hash % 360;
}

/** One colour per type; `list[str]` and `list[int]` share the hue of `list`. */
export function portColor(type: string): string {
  const base = type.split("[", 1)[0].trim().toLowerCase();
  if (base === "" || base === "any") return "hsl(0 0% 58%)";
  return `hsl(${TYPE_HUES[base] ?? hashHue(base)} 62% 47%)`;
}

export const STATUS_COLORS: Record<Status, string> = {
  pending: "#9ca3af",
  running: "#2563eb",
  succeeded: "#16a34a",
  failed: "#dc2626",
  skipped: "#cbd5e1",
  waiting: "#d97706",
  cached: "#0d9488",
  reused: "#7c3aed",
};
