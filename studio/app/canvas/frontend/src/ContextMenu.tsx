/** A node's context menu (right click): duplicate, copy, delete, open its sub-flow. */

import { useEffect } from "react";
import type { GraphNode } from "./types";

export interface MenuAt {
  node: GraphNode;
  x: number;
  y: number;
}

interface Props {
  at: MenuAt;
  onClose: () => void;
  onDuplicate: () => void;
  onCopy: () => void;
  onDelete: () => void;
  onOpenFlow: (() => void) | null;
}

export function ContextMenu({ at, onClose, onDuplicate, onCopy, onDelete, onOpenFlow }: Props) {
  useEffect(() => {
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && onClose();
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  const item = (label: string, testId: string, action: () => void) => (
    <button
      type="button"
      role="menuitem"
      data-testid={`menu-${testId}`}
      onClick={() => {
        action();
        onClose();
      }}
    >
      {label}
    </button>
  );
  return (
    <div className="fc-menu" role="menu" data-testid="node-menu" style={{ left: at.x, top: at.y }}>
      <div className="fc-menu-title">{at.node.id}</div>
      {item("Duplicate (Ctrl+D)", "duplicate", onDuplicate)}
      {item("Copy (Ctrl+C)", "copy", onCopy)}
      {onOpenFlow ? item("Open sub-flow", "open-flow", onOpenFlow) : null}
      {item("Delete (Del)", "delete", onDelete)}
    </div>
  );
}
