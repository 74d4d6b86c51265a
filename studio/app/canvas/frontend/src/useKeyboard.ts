/**
 * Delete/Backspace, Ctrl/Cmd+Z, Ctrl/Cmd+Shift+Z, Ctrl+Y, Ctrl/Cmd+C, V and D, unless the user is
 * typing; Ctrl/Cmd+S saves from anywhere on the page (the Streamlit page around the canvas too).
 */

import { useEffect, useRef } from "react";

export interface KeyActions {
  onDelete: () => void;
  onUndo: () => void;
  onRedo: () => void;
  onSave: () => void;
  onCopy: () => void;
  onPaste: () => void;
  onDuplicate: () => void;
}

function isTyping(target: EventTarget | null): boolean {
  return (
    target instanceof HTMLInputElement ||
    target instanceof HTMLTextAreaElement ||
    (target instanceof HTMLElement && target.isContentEditable)
  );
}

function actionFor(event: KeyboardEvent, actions: KeyActions): (() => void) | null {
  const key = event.key.toLowerCase();
  const mod = event.ctrlKey || event.metaKey;
  if (key === "delete" || key === "backspace") return actions.onDelete;
  if (mod && key === "c") return actions.onCopy;
  if (mod && key === "v") return actions.onPaste;
  if (mod && key === "d") return actions.onDuplicate;
  if (mod && key === "z") return event.shiftKey ? actions.onRedo : actions.onUndo;
  if (mod && key === "y") return actions.onRedo;
  return null;
}

export function useKeyboard(actions: KeyActions): void {
  const latest = useRef(actions);
  latest.current = actions;
  useEffect(() => {
    const onSave = (event: KeyboardEvent) => {
      if (!(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== "s") return false;
      event.preventDefault();
      latest.current.onSave();
      return true;
    };
    const onKeyDown = (event: KeyboardEvent) => {
      if (onSave(event) || isTyping(event.target)) return;
      const action = actionFor(event, latest.current);
      if (!action) return;
      event.preventDefault();
      action();
    };
    window.addEventListener("keydown", onKeyDown);
    const host = parentWindow();
    const onHostKeyDown = (event: KeyboardEvent) => void onSave(event);
    host?.addEventListener("keydown", onHostKeyDown);
    return () => {
      window.removeEventListener("keydown", onKeyDown);
      host?.removeEventListener("keydown", onHostKeyDown);
    };
  }, []);
}

/** The Streamlit page around the component's frame (same origin), or null where it cannot be reached. */
function parentWindow(): Window | null {
  try {
    return window.parent !== window && window.parent.document ? window.parent : null;
  } catch {
    return null;
  }
}
