/** Delete/Backspace, Ctrl/Cmd+Z, Ctrl/Cmd+Shift+Z and Ctrl+Y, unless the user is typing. */

import { useEffect, useRef } from "react";

export interface KeyActions {
  onDelete: () => void;
  onUndo: () => void;
  onRedo: () => void;
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
  if (mod && key === "z") return event.shiftKey ? actions.onRedo : actions.onUndo;
  if (mod && key === "y") return actions.onRedo;
  return null;
}

export function useKeyboard(actions: KeyActions): void {
  const latest = useRef(actions);
  latest.current = actions;
  useEffect(() => {
    const onKeyDown = (event: KeyboardEvent) => {
      if (isTyping(event.target)) return;
      const action = actionFor(event, latest.current);
      if (!action) return;
      event.preventDefault();
      action();
    };
    window.addEventListener("keydown", onKeyDown);
    return () => window.removeEventListener("keydown", onKeyDown);
  }, []);
}
