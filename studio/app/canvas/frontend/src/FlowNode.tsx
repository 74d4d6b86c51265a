/** One node card: label, type, typed input handles on the left, output handles on the right. */

import { Handle, Position, type Node, type NodeProps } from "@xyflow/react";
import { memo, useContext } from "react";
import { NodeActionsContext } from "./actions";
import { STATUS_COLORS, portColor } from "./colors";
import { GUARD_HANDLE, type GraphNode, type InputPort, type OutputPort } from "./types";

export type NodeData = { node: GraphNode; key: string };
export type CanvasNode = Node<NodeData, "flow">;

/** The name of the extra handle that creates a new port (flow input, flow output, template variable). */
export const ADD_PORT = "+";

const ADD_PORT_LABELS = { inputs: "new flow input", outputs: "new flow output", node: "new variable" };

function InputRow({ nodeId, port }: { nodeId: string; port: InputPort }) {
  return (
    <div className={`fc-port fc-port-in${port.wired ? " is-wired" : ""}`} title={`${port.name}: ${port.type}`}>
      <Handle
        type="target"
        position={Position.Left}
        id={port.name}
        data-testid={`port-${nodeId}-in-${port.name}`}
        style={{ background: portColor(port.type) }}
      />
      <span className="fc-port-name">{port.name}</span>
      {port.required ? <span className="fc-required" title="required">*</span> : null}
      <span className="fc-port-type">: {port.type}</span>
    </div>
  );
}

function OutputRow({ nodeId, port }: { nodeId: string; port: OutputPort }) {
  return (
    <div className="fc-port fc-port-out" title={`${port.name}: ${port.type}`}>
      <span className="fc-port-name">{port.name}</span>
      <span className="fc-port-type">: {port.type}</span>
      <Handle
        type="source"
        position={Position.Right}
        id={port.name}
        data-testid={`port-${nodeId}-out-${port.name}`}
        style={{ background: portColor(port.type) }}
      />
    </div>
  );
}

function AddPortRow({ node }: { node: GraphNode }) {
  const out = node.kind === "inputs";
  const side = out ? "out" : "in";
  return (
    <div className={`fc-port fc-port-${side} fc-port-add`} title={`drag to create a ${ADD_PORT_LABELS[node.kind]}`}>
      <Handle
        type={out ? "source" : "target"}
        position={out ? Position.Right : Position.Left}
        id={ADD_PORT}
        data-testid={`port-${node.id}-${side}-${ADD_PORT}`}
        className="fc-handle-add"
      />
      <span className="fc-port-name">+ {ADD_PORT_LABELS[node.kind]}</span>
    </div>
  );
}

function Header({ node }: { node: GraphNode }) {
  const color = node.status ? STATUS_COLORS[node.status] : undefined;
  return (
    <div className="fc-node-header">
      <span className="fc-dot" style={{ background: color }} title={node.status ?? "not run"} />
      <span className="fc-label">{node.label}</span>
      {node.type ? <span className="fc-type">{node.type}</span> : null}
    </div>
  );
}

/** What the YAML says beside the ports: the guard, the model alias, the description, the sub-flow. */
function Facts({ node }: { node: GraphNode }) {
  const { openFlow } = useContext(NodeActionsContext);
  if (!node.when && !node.model && !node.description && !node.subflow) return null;
  return (
    <div className="fc-facts">
      {node.when || node.model ? (
        <div className="fc-badges">
          {node.when ? (
            <span className="fc-badge fc-badge-when" data-testid={`guard-${node.id}`} title={`runs only when ${node.when}`}>
              when {node.when}
            </span>
          ) : null}
          {node.model ? (
            <span className="fc-badge fc-badge-model" data-testid={`model-${node.id}`} title="model alias">
              {node.model}
            </span>
          ) : null}
        </div>
      ) : null}
      {node.description ? (
        <div className="fc-description" data-testid={`description-${node.id}`}>
          {node.description}
        </div>
      ) : null}
      {node.subflow ? (
        <button
          type="button"
          className="fc-subflow nodrag"
          data-testid={`subflow-${node.id}`}
          title="open the sub-flow in the editor"
          onClick={(event) => {
            event.stopPropagation();
            openFlow(node.subflow ?? "");
          }}
        >
          ↗ {node.subflow}
        </button>
      ) : null}
    </div>
  );
}

function Errors({ errors }: { errors: string[] }) {
  return (
    <ul className="fc-errors" data-testid="node-errors">
      {errors.map((error, i) => (
        <li key={i}>{error}</li>
      ))}
    </ul>
  );
}

function className(node: GraphNode, selected: boolean): string {
  const parts = ["fc-node", `fc-kind-${node.kind}`];
  if (selected) parts.push("is-selected");
  if (node.errors?.length) parts.push("has-errors");
  if (node.status) parts.push(`status-${node.status}`);
  if (node.cause) parts.push("is-cause");
  return parts.join(" ");
}

function FlowNodeView({ data, selected }: NodeProps<CanvasNode>) {
  const { node } = data;
  const errors = node.errors ?? [];
  const addIn = node.add_port && node.kind !== "inputs";
  const addOut = node.add_port && node.kind === "inputs";
  const color = node.status ? STATUS_COLORS[node.status] : undefined;
  return (
    <div
      className={className(node, selected)}
      data-testid={`node-${node.id}`}
      title={errors.length ? errors.join("\n") : undefined}
      style={color && !errors.length ? { borderColor: color } : undefined}
    >
      {node.kind === "node" ? (
        <Handle type="target" position={Position.Top} id={GUARD_HANDLE} className="fc-handle-guard" isConnectable={false} />
      ) : null}
      {node.cause ? (
        <div className="fc-cause" data-testid={`cause-${node.id}`}>
          likely cause
        </div>
      ) : null}
      <Header node={node} />
      <Facts node={node} />
      <div className="fc-ports">
        <div className="fc-col">
          {node.inputs.map((port) => (
            <InputRow key={port.name} nodeId={node.id} port={port} />
          ))}
          {addIn ? <AddPortRow node={node} /> : null}
        </div>
        <div className="fc-col fc-col-out">
          {node.outputs.map((port) => (
            <OutputRow key={port.name} nodeId={node.id} port={port} />
          ))}
          {addOut ? <AddPortRow node={node} /> : null}
        </div>
      </div>
      {node.preview ? (
        <div className="fc-preview" data-testid={`preview-${node.id}`} title={node.preview}>
          {node.preview}
        </div>
      ) : null}
      {node.run_error ? (
        <div className="fc-run-error" data-testid={`run-error-${node.id}`}>
          {node.run_error}
        </div>
      ) : null}
      {errors.length ? <Errors errors={errors} /> : null}
    </div>
  );
}

export const FlowNode = memo(FlowNodeView);
