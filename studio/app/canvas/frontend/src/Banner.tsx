/** Python's message (a refused connection, a hint) over the top of the canvas, dismissable. */

import { useState } from "react";
import type { Message } from "./types";

export function Banner({ message, ack }: { message: Message | null; ack: number }) {
  // Keyed by ack too: the same text after a later event shows again.
  const key = message ? `${ack}:${message.level}:${message.text}` : "";
  const [dismissed, setDismissed] = useState("");
  if (!message || dismissed === key) return null;
  return (
    <div className={`fc-message fc-message-${message.level}`} data-testid="canvas-message" role="status">
      <span>{message.text}</span>
      <button type="button" aria-label="dismiss" onClick={() => setDismissed(key)}>
        ×
      </button>
    </div>
  );
}
