/** Show/hide the node list, undo, redo, delete, fit, tidy and go to a node, above the canvas (Save is the page's, one button; Ctrl/Cmd+S here too). */

import { memo } from "react";
import { GoTo } from "./GoTo";

export interface ToolbarProps {
  paletteOpen: boolean;
  onTogglePalette: () => void;
  canUndo: boolean;
  canRedo: boolean;
  canDelete: boolean;
  onUndo: () => void;
  onRedo: () => void;
  onDelete: () => void;
  onFit: () => void;
  onTidy: () => void;
  /** The node ids "go to node" offers. */
  nodeIds: string[];
  onGoTo: (id: string) => void;
}

function ToolbarView(props: ToolbarProps) {
  return (
    <div className="fc-toolbar">
      <button
        type="button"
        data-testid="palette-toggle"
        aria-pressed={props.paletteOpen}
        onClick={props.onTogglePalette}
        title={props.paletteOpen ? "Hide the node list" : "Show the node list"}
      >
        {props.paletteOpen ? "◂ Nodes" : "▸ Nodes"}
      </button>
      <button type="button" data-testid="canvas-undo" disabled={!props.canUndo} onClick={props.onUndo} title="Undo (Ctrl+Z)">
        ↶ Undo
      </button>
      <button type="button" data-testid="canvas-redo" disabled={!props.canRedo} onClick={props.onRedo} title="Redo (Ctrl+Shift+Z)">
        ↷ Redo
      </button>
      <button type="button" data-testid="canvas-delete" disabled={!props.canDelete} onClick={props.onDelete} title="Delete the selection (Del)">
        Delete
      </button>
      <button type="button" data-testid="canvas-fit" onClick={props.onFit} title="Fit the flow in view">
        Fit
      </button>
      <button type="button" data-testid="canvas-tidy" onClick={props.onTidy} title="Lay the flow out left to right by its wires (undoable)">
        Tidy
      </button>
      <GoTo ids={props.nodeIds} onGoTo={props.onGoTo} />
    </div>
  );
}

export const Toolbar = memo(ToolbarView);
