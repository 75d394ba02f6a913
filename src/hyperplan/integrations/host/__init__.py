"""One selection host for the MCP gateway and every framework adapter (issue 39, item 4):
selectors per tool set with a keyword fallback (:mod:`.pool`), the conversations
(:mod:`.conversation`) and the narrowing (:mod:`.host`). Nothing heavy loads on import."""

from hyperplan.integrations.host.conversation import (
    Call,
    Conversation,
    ConversationLimits,
    ConversationTable,
    Turn,
    open_session,
    session_of,
)
from hyperplan.integrations.host.host import (
    DEFAULT_BUDGET,
    MAX_CONVERSATIONS,
    Keep,
    Narrowed,
    SelectionHost,
    catalog_key,
    tool_set_key,
)
from hyperplan.integrations.host.pool import (
    DEFAULT_SELECTORS,
    Builder,
    BuildState,
    BuildStatus,
    Built,
    SelectorPool,
)

__all__ = [
    "DEFAULT_BUDGET", "DEFAULT_SELECTORS", "MAX_CONVERSATIONS", "BuildState", "BuildStatus",
    "Builder", "Built", "Call", "Conversation", "ConversationLimits", "ConversationTable",
    "Keep", "Narrowed", "SelectionHost", "SelectorPool", "Turn", "catalog_key",
    "open_session", "session_of", "tool_set_key",
]
