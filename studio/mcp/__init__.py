"""MCP client side: the server settings a flow names, the user's stdio allowlist, run-scoped sessions."""
