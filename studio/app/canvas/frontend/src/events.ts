/**
 * The event queue. Every user action becomes an event with an increasing `seq`; the component
 * sends all events Python has not acknowledged yet, so none is lost when two happen before a rerun.
 */

import { setComponentValue } from "./streamlit";
import type { CanvasEvent } from "./types";

export type SentEvent = CanvasEvent & { seq: number };

function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class EventQueue {
  /** Made once per mount: Python tells a fresh mount (whose seq restarts at 1) by it. */
  readonly session = randomId();
  /** The highest seq Python has acknowledged for this mount. */
  acked = 0;
  private seq = 0;
  private pending: SentEvent[] = [];

  /** Queue an event and send every unacknowledged one; returns the event's seq. */
  push(event: CanvasEvent): number {
    this.seq += 1;
    this.pending.push({ ...event, seq: this.seq });
    setComponentValue({ session: this.session, events: this.pending });
    return this.seq;
  }

  /** Drop the events Python has processed. An ack above our own seq, or for another session, is an earlier mount's. */
  ack(upTo: number, session: string | null): void {
    if ((session !== null && session !== this.session) || upTo > this.seq || upTo <= this.acked) return;
    this.acked = upTo;
    this.pending = this.pending.filter((event) => event.seq > upTo);
  }
}
