"""Serving flows to other programs: the HTTP API and the MCP server."""
