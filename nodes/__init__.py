"""The built-in node library. Each module is one node type, registered by entry point."""
