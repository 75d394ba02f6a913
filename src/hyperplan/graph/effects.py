"""Effect and precondition nodes (HyperAgent paper, HyperGraph Construction, "Graph Refinement").

The paper extracts state predicates with an LLM plus annotators; we derive them with
documented rules and keep whatever a catalog declares:

* **credentials**: a tool with a required credential input (``access_token``, ``api_key``,
  ``session_id``...) gets the precondition ``<ns>.authenticated``; a tool whose output contains
  a credential field gets the effect ``<ns>.authenticated``. ``ns`` is the tool's namespace
  (``metadata["app"]``, else the part of its name before the first dot).
* **state changes**: a tool that writes (HTTP method POST/PUT/PATCH/DELETE, or a name that
  starts with a write verb) gets the effect ``<tool>.done``, a target for goals such as
  "the song is liked".
* declared ``effects`` / ``preconditions`` of a :class:`~hyperplan.catalog.ToolSpec` are kept.

:mod:`hyperplan.graph.infer` applies these rules; an effect links to every precondition with the
same predicate (:mod:`hyperplan.graph.links`).
"""

from __future__ import annotations

import numpy as np

from hyperplan.catalog import ToolSpec
from hyperplan.graph.model import Evidence, Hypergraph
from hyperplan.graph.text import name_tokens

CREDENTIAL_KEYS = frozenset(
    {
        "access_token", "token", "auth_token", "api_key", "apikey", "session_id",
        "session_token", "bearer_token", "jwt", "auth", "authorization", "id_token",
    }
)
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
WRITE_VERBS = frozenset(
    {
        "add", "create", "delete", "remove", "update", "send", "post", "put", "set", "book",
        "buy", "pay", "order", "cancel", "like", "unlike", "follow", "unfollow", "share",
        "upload", "move", "rename", "mark", "approve", "reject", "reserve", "schedule",
        "login", "logout", "register", "signup", "edit", "modify", "write", "save", "transfer",
    }
)


def namespace(tool: ToolSpec) -> str:
    """The namespace of a tool: its app (metadata) or the prefix of a dotted name."""
    app = tool.metadata.get("app")
    if isinstance(app, str) and app:
        return app
    return tool.name.split(".", 1)[0] if "." in tool.name else ""


def credential_scope(name: str) -> str | None:
    """``None`` unless ``name`` is a credential; else the namespace its name carries before the
    credential suffix (``file_system_access_token`` -> ``file_system``) or ``""``."""
    tokens = name_tokens(name)
    for cut in range(len(tokens)):
        if "_".join(tokens[cut:]) in CREDENTIAL_KEYS:
            return "_".join(tokens[:cut])
    return None


def is_credential(name: str) -> bool:
    return credential_scope(name) is not None


def auth_predicate(tool: ToolSpec, scope: str = "") -> str:
    ns = scope or namespace(tool)
    return f"{ns}.authenticated" if ns else "authenticated"


def write_evidence(tool: ToolSpec) -> Evidence | None:
    """Why ``tool`` is taken to write: an MCP ``destructiveHint`` (``DECLARED``: destructive
    tools always write), its HTTP method (``DECLARED``), a name starting with a write verb
    (``NAME``); ``None`` when it is not, and always for an MCP ``readOnlyHint`` tool (it
    never writes, whatever its name)."""
    if tool.metadata.get("destructive") is True:
        return Evidence.DECLARED
    if tool.metadata.get("read_only") is True:
        return None
    method = str(tool.metadata.get("method", "")).upper()
    if method:
        return Evidence.DECLARED if method in WRITE_METHODS else None
    short = tool.name.rsplit(".", 1)[-1]
    tokens = name_tokens(short)
    return Evidence.NAME if tokens and tokens[0] in WRITE_VERBS else None


def write_tools(graph: Hypergraph) -> np.ndarray:
    """Per tool of ``graph``, whether it writes: it has the state-change effect
    ``<tool>.done`` (the rule above, or a catalog's own declaration). Read only: the graph
    computes it once (:attr:`Hypergraph.writing_tools`)."""
    return graph.writing_tools
