/** Guard (`when`) and `after` links: drawn like wires, their word just above the card they enter.
 *
 * A link enters its card at the top (the hidden guard handle), so the middle of the curve, where
 * React Flow puts an edge's label, often lies under that card or its neighbour, which hides it. */
import { BaseEdge, getBezierPath, type EdgeProps } from "@xyflow/react";

/** How far above the card's top edge the link's word sits, in canvas pixels. */
const LABEL_RISE = 14;

function LinkEdge(props: EdgeProps) {
  const [path] = getBezierPath(props);
  return (
    <BaseEdge
      id={props.id}
      path={path}
      style={props.style}
      markerEnd={props.markerEnd}
      interactionWidth={props.interactionWidth}
      label={props.label}
      labelX={props.targetX}
      labelY={props.targetY - LABEL_RISE}
      labelStyle={props.labelStyle}
      labelShowBg={props.labelShowBg}
      labelBgStyle={props.labelBgStyle}
      labelBgPadding={props.labelBgPadding}
      labelBgBorderRadius={props.labelBgBorderRadius}
    />
  );
}

export const EDGE_TYPES = { link: LinkEdge };
