/** The searchable list of node types: click to add, or drag onto the canvas. */

import { memo, useMemo, useState, type DragEvent } from "react";
import type { PaletteEntry } from "./types";

/** The drag data type that carries a node type from the palette to the canvas. */
export const DRAG_TYPE = "application/x-flowstudio-node-type";

function matches(entry: PaletteEntry, query: string): boolean {
  const q = query.trim().toLowerCase();
  return !q || entry.type.toLowerCase().includes(q) || entry.description.toLowerCase().includes(q);
}

function grouped(entries: PaletteEntry[], query: string): [string, PaletteEntry[]][] {
  const groups = new Map<string, PaletteEntry[]>();
  for (const entry of entries) {
    if (!matches(entry, query)) continue;
    const category = entry.category || "other";
    groups.set(category, [...(groups.get(category) ?? []), entry]);
  }
  return [...groups.entries()];
}

function Item({ entry, onAdd }: { entry: PaletteEntry; onAdd: (type: string) => void }) {
  const onDragStart = (event: DragEvent) => {
    event.dataTransfer.setData(DRAG_TYPE, entry.type);
    event.dataTransfer.effectAllowed = "copy";
  };
  return (
    <button
      type="button"
      className="fc-palette-item"
      data-testid={`palette-item-${entry.type}`}
      draggable
      onDragStart={onDragStart}
      onClick={() => onAdd(entry.type)}
      title={entry.description}
    >
      <span className="fc-palette-type">{entry.type}</span>
      <span className="fc-palette-desc">{entry.description}</span>
    </button>
  );
}

function PaletteView({ entries, onAdd }: { entries: PaletteEntry[]; onAdd: (type: string) => void }) {
  const [query, setQuery] = useState("");
  const groups = useMemo(() => grouped(entries, query), [entries, query]);
  return (
    <aside className="fc-palette">
      <input
        className="fc-search"
        data-testid="palette-search"
        type="search"
        placeholder="Search node types"
        value={query}
        onChange={(event) => setQuery(event.target.value)}
        onKeyDown={(event) => event.key === "Escape" && setQuery("")}
      />
      <div className="fc-palette-list">
        {groups.map(([category, items]) => (
          <section key={category}>
            <h4>{category}</h4>
            {items.map((entry) => (
              <Item key={entry.type} entry={entry} onAdd={onAdd} />
            ))}
          </section>
        ))}
        {groups.length === 0 ? <p className="fc-empty">No node type matches.</p> : null}
      </div>
    </aside>
  );
}

export const Palette = memo(PaletteView);
