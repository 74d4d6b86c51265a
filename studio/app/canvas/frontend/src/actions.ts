/** What a node card may ask of the editor (open a sub-flow), passed down without prop drilling. */

import { createContext } from "react";

export interface NodeActions {
  openFlow: (path: string) => void;
}

export const NodeActionsContext = createContext<NodeActions>({ openFlow: () => undefined });
