"""hyperplan in front of other agents: the MCP gateway (:mod:`.mcp_gateway`) and adapters for
agent frameworks, each a small module of its own, all using the LLM-free selection API
(:mod:`hyperplan.select`: the Tool Context Graph and Deficit-Oriented Expansion as a tool
pre-selection layer)."""
