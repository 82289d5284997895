"""Adapters at the edge: MCP servers, HTTP routes, event streams, connector delivery.

Handlers decode input, call one service function and encode the result; they never
append to a log themselves.
"""
