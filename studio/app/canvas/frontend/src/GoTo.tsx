/** "Go to node": a search box on the toolbar; Enter (or a pick from its list) centres the view on the node and selects it. */

import { memo, useState, type ChangeEvent, type FormEvent } from "react";

interface Props {
  /** Every node id on the canvas, in the flow's order. */
  ids: string[];
  /** Centre the view on the node and select it. */
  onGoTo: (id: string) => void;
}

/** The id `text` names: itself, else the same id in other case, else the first that contains it. */
export function matchingId(ids: string[], text: string): string | null {
  const wanted = text.trim().toLowerCase();
  if (!wanted) return null;
  return ids.find((id) => id.toLowerCase() === wanted) ?? ids.find((id) => id.toLowerCase().includes(wanted)) ?? null;
}

function GoToView({ ids, onGoTo }: Props) {
  const [text, setText] = useState("");
  const [missing, setMissing] = useState(false);
  const go = (value: string) => {
    const id = matchingId(ids, value);
    setMissing(id === null && value.trim() !== "");
    if (id) onGoTo(id);
  };
  const onChange = (event: ChangeEvent<HTMLInputElement>) => {
    setText(event.target.value);
    setMissing(false);
    // a pick from the list arrives as a replacement of the whole text (Chromium) or with no input type
    const inputType = (event.nativeEvent as InputEvent).inputType;
    if ((inputType === undefined || inputType === "insertReplacementText") && ids.includes(event.target.value)) go(event.target.value);
  };
  const onSubmit = (event: FormEvent) => {
    event.preventDefault();
    go(text);
  };
  return (
    <form className="fc-goto" role="search" onSubmit={onSubmit}>
      <input
        type="search"
        list="fc-goto-ids"
        data-testid="canvas-goto"
        aria-label="Go to node"
        placeholder="Go to node…"
        value={text}
        onChange={onChange}
        aria-invalid={missing}
        title={missing ? `No node matches “${text.trim()}”` : "A node's id, then Enter: the view centres on it and selects it"}
      />
      <datalist id="fc-goto-ids">
        {ids.map((id) => (
          <option key={id} value={id} />
        ))}
      </datalist>
    </form>
  );
}

export const GoTo = memo(GoToView);
