"""`text.split`: cut text into chunks of at most `chunk_chars`, on the largest natural boundary."""

from __future__ import annotations

import itertools

from pydantic import BaseModel, ConfigDict, Field

from studio.node import Node, NodeContext

SEPARATORS = ["\n\n", "\n", ". ", " "]


def split_text(text: str, chunk_chars: int, overlap_chars: int = 0, separators: list[str] = SEPARATORS) -> list[str]:
    """Chunks of at most `chunk_chars`: paragraphs first, then lines, sentences, words, characters.

    Neighbouring pieces are packed together while they fit; a piece too long for one chunk is
    split on its own. Each chunk after the first starts with up to `overlap_chars` of the end
    of the one before, cut at a word boundary.
    """
    chunks = [c.strip() for c in _split(text, chunk_chars - overlap_chars, separators) if c.strip()]
    if overlap_chars <= 0 or not chunks:
        return chunks
    return [
        chunks[0],
        *(_tail(before, overlap_chars) + chunk for before, chunk in itertools.pairwise(chunks)),
    ]


def _split(text: str, size: int, separators: list[str]) -> list[str]:
    if len(text) <= size:
        return [text]
    index = next((i for i, s in enumerate(separators) if s in text), None)
    if index is None:
        return [text[i : i + size] for i in range(0, len(text), size)]
    separator = separators[index]
    parts = text.split(separator)
    chunks, current = [], ""
    for part in [p + separator for p in parts[:-1]] + [parts[-1]]:
        if len(part) > size:
            chunks += [current, *_split(part, size, separators[index + 1 :])]
            current = ""
        elif len(current) + len(part) > size:
            chunks.append(current)
            current = part
        else:
            current += part
    return [*chunks, current]


def _tail(text: str, chars: int) -> str:
    tail = text[-chars:]
    cut = tail.find(" ")
    return (tail[cut + 1 :] if 0 <= cut < len(tail) - 1 else tail).lstrip() + " "


class Split(Node):
    """Split text into chunks (for map-reduce, indexing or long inputs)."""

    class Config(BaseModel):
        model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

        chunk_chars: int = Field(default=1000, ge=10)
        """Longest chunk, in characters."""
        overlap_chars: int = Field(default=0, ge=0)
        """Characters of the previous chunk repeated at the start of the next (context for each chunk)."""
        separators: list[str] = SEPARATORS
        """Boundaries tried in order: paragraphs, lines, sentences, words; characters as a last resort."""

    class Inputs(BaseModel):
        text: str
        """The text to split."""

    class Outputs(BaseModel):
        chunks: list[str]
        """The chunks, in order; none for empty text."""

    config: Config

    def check(self) -> list[tuple[str, str]]:
        if self.config.overlap_chars * 2 > self.config.chunk_chars:
            return [("overlap_chars", "overlap_chars must be at most half of chunk_chars")]
        return []

    async def run(self, inputs: Inputs, ctx: NodeContext) -> Outputs:
        c = self.config
        return self.Outputs(chunks=split_text(inputs.text, c.chunk_chars, c.overlap_chars, c.separators))
