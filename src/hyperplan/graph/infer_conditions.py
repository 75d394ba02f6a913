"""Precondition and effect nodes inferred from names and descriptions, without a model
(HyperAgent paper, "Hypergraph construction", "Graph Refinement": the condition and effect
nodes of Definition 1, which the paper extracts with GPT-4o and annotators).

Per tool (:func:`tool_conditions`, called by :func:`hyperplan.graph.infer.infer_nodes`):

* **sign-in**: a tool named ``login`` / ``sign_in`` / ``authenticate`` / ``create_session``
  has the effect ``<ns>.authenticated`` (tools taking a credential get the precondition from
  :mod:`hyperplan.graph.infer`'s credential rule).
* **toggles**: ``enable_X`` / ``turn_on_X`` / ``activate_X`` / ``switch_on_X`` have the effect
  ``X.enabled`` (``<ns>.X.enabled`` in a namespace); ``set_X_status`` / ``set_X_enabled`` /
  ``toggle_X`` too, with less confidence (they may switch it off).
* **validators**: ``validate_X`` / ``verify_X`` / ``is_valid_X``, and ``check_X`` when its
  description speaks of validity, have the effect ``X.valid``.

Per catalog (:func:`catalog_conditions`: a precondition only means something when a tool of
the catalog can meet it, else it would be a deficit nothing fills):

* a tool whose description says it "requires authentication" / "must be logged in" gets the
  precondition ``<ns>.authenticated`` when a tool of its namespace signs in;
* a tool **uses X** when X's words appear, in order, in its name, it is in X's enabler's
  namespace and it is no toggle or status tool of X itself (``send_file_via_bluetooth`` uses
  ``bluetooth``; ``get_bluetooth_status`` does not): it gets the precondition ``X.enabled``.
  Names only, so a description that merely mentions X adds nothing (conservative).
* a tool with an input named X (``email``, or ending with it: ``recipient_email``) gets the
  precondition ``X.valid`` of a validator of X, at low confidence: validating first is
  advisable, rarely required.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from hyperplan.catalog import Catalog, ToolSpec
from hyperplan.graph.annotations import InferredNode
from hyperplan.graph.effects import auth_predicate, namespace
from hyperplan.graph.model import Evidence, NodeKind
from hyperplan.graph.schema_paths import input_fields
from hyperplan.graph.text import name_tokens

# Confidences (chosen by judgement: no benchmark has condition nodes; see the module doc).
CONF_SIGN_IN = 0.9
CONF_NEEDS_SIGN_IN = 0.7
CONF_ENABLE = 0.9
CONF_SET = 0.7
CONF_USES = 0.7
CONF_VALIDATE = 0.8
CONF_CHECK = 0.6
CONF_NEEDS_VALID = 0.5

_SIGN_IN = (("login",), ("log", "in"), ("logon",), ("sign", "in"), ("signin",),
            ("authenticate",), ("create", "session"), ("open", "session"))
_ENABLE = (("enable",), ("turn", "on"), ("activate",), ("switch", "on"))
_SET = (("toggle",), ("set",))
_VALIDATE = (("validate",), ("verify",), ("is", "valid"), ("check", "valid"))
_CHECK = (("check",), ("is",))
_STATE_WORDS = frozenset("status state enabled disabled on off mode power setting settings "
                         "active".split())
_TOGGLE_VERBS = frozenset("enable disable turn switch activate deactivate toggle set get is "
                          "check status".split())
_NEEDS_AUTH = re.compile(r"\b(requires? (an? )?(authentication|login|sign[- ]in|session)|"
                         r"must (be )?(logged|signed) in|authenticated (users?|session) only)\b",
                         re.IGNORECASE)
_VALIDITY = re.compile(r"\b(valid|validity|verif|whether .* is an?)\b", re.IGNORECASE)


def tool_conditions(tool: ToolSpec) -> list[InferredNode]:
    """The preconditions and effects ``tool`` gets from its own name and description."""
    nodes = []
    if signs_in(tool):
        nodes.append(_node(NodeKind.EFFECT, auth_predicate(tool), "signs in", CONF_SIGN_IN))
    toggled = toggled_feature(tool)
    if toggled is not None:
        feature, confidence = toggled
        nodes.append(_node(NodeKind.EFFECT, enabled_predicate(tool, feature),
                           f"turns {' '.join(feature)} on", confidence))
    checked = validated_value(tool)
    if checked is not None:
        value, confidence = checked
        nodes.append(_node(NodeKind.EFFECT, valid_predicate(value),
                           f"checks that a {' '.join(value)} is valid", confidence))
    return nodes


def catalog_conditions(catalog: Catalog) -> dict[str, tuple[InferredNode, ...]]:
    """Per tool name, the preconditions that tie it to an enabler or a validator of the
    catalog (module doc); pass them to :func:`hyperplan.graph.build.build_graph` as
    ``annotations`` (merged with the rest)."""
    enablers = [(tool, found[0]) for tool in catalog.tools
                if (found := toggled_feature(tool)) is not None]
    validators = [found[0] for tool in catalog.tools
                  if (found := validated_value(tool)) is not None]
    sign_in_spaces = {namespace(tool) for tool in catalog.tools if signs_in(tool)}
    out: dict[str, tuple[InferredNode, ...]] = {}
    for tool in catalog.tools:
        nodes = [*_needs_sign_in(tool, sign_in_spaces), *_uses(tool, enablers),
                 *_takes_checked(tool, validators)]
        if nodes:
            out[tool.name] = tuple(dict.fromkeys(nodes))
    return out


def merged(*sources: Mapping[str, Sequence[InferredNode]]) -> dict[str, tuple[InferredNode, ...]]:
    """Annotations of several sources joined per tool (order kept; merge_nodes decides)."""
    out: dict[str, list[InferredNode]] = {}
    for source in sources:
        for name, nodes in source.items():
            out.setdefault(name, []).extend(nodes)
    return {name: tuple(nodes) for name, nodes in out.items()}


# ----------------------------------------------------------------------------- families
def signs_in(tool: ToolSpec) -> bool:
    """Whether ``tool``'s name says it signs in (``login``, ``sign_in``, ``create_session``)."""
    return _after(name_tokens(tool.name.rsplit(".", 1)[-1]), _SIGN_IN) is not None


def _needs_sign_in(tool: ToolSpec, spaces: set[str]) -> list[InferredNode]:
    """``<ns>.authenticated`` for a tool whose description says it needs a session, when a
    tool of its namespace signs in."""
    if namespace(tool) not in spaces or signs_in(tool) \
            or not _NEEDS_AUTH.search(tool.description):
        return []
    return [_node(NodeKind.PRECONDITION, auth_predicate(tool),
                  "the description says it needs a signed-in session", CONF_NEEDS_SIGN_IN,
                  Evidence.DESCRIPTION)]


def toggled_feature(tool: ToolSpec) -> tuple[tuple[str, ...], float] | None:
    """The feature a tool turns on and the confidence of it: ``enable_bluetooth`` ->
    ``(bluetooth,)``; ``set_wifi_status`` -> ``(wifi,)`` (lower); None for any other tool."""
    tokens = name_tokens(tool.name.rsplit(".", 1)[-1])
    rest = _after(tokens, _ENABLE)
    confidence = CONF_ENABLE
    if rest is None:
        rest = _after(tokens, _SET)
        confidence = CONF_SET
        if rest is None or not (set(rest) & _STATE_WORDS or tokens[0] == "toggle"):
            return None
    feature = tuple(t for t in rest if t not in _STATE_WORDS)
    return (feature, confidence) if feature else None


def validated_value(tool: ToolSpec) -> tuple[tuple[str, ...], float] | None:
    """The value a validator checks: ``validate_email`` / ``is_valid_email`` -> ``(email,)``;
    ``check_email`` only when its description speaks of validity (lower confidence)."""
    tokens = name_tokens(tool.name.rsplit(".", 1)[-1])
    rest = _after(tokens, _VALIDATE)
    confidence = CONF_VALIDATE
    if rest is None:
        rest = _after(tokens, _CHECK)
        if rest is None or not _VALIDITY.search(tool.description):
            return None
        confidence = CONF_CHECK
    value = tuple(t for t in rest if t not in ("valid", "validity", "format", "is", "a", "an"))
    return (value, confidence) if value and not set(value) & _STATE_WORDS else None


def enabled_predicate(tool: ToolSpec, feature: Sequence[str]) -> str:
    ns = namespace(tool)
    name = "_".join(feature)
    return f"{ns}.{name}.enabled" if ns else f"{name}.enabled"


def valid_predicate(value: Sequence[str]) -> str:
    return f"{'_'.join(value)}.valid"


def _uses(tool: ToolSpec, enablers: Sequence[tuple[ToolSpec, tuple[str, ...]]]
          ) -> list[InferredNode]:
    tokens = name_tokens(tool.name.rsplit(".", 1)[-1])
    if not tokens or tokens[0] in _TOGGLE_VERBS:
        return []  # a toggle or status tool of a feature does not need it on
    nodes = []
    for enabler, feature in enablers:
        if enabler.name == tool.name or namespace(enabler) != namespace(tool):
            continue
        if _contains(tokens, feature):
            nodes.append(_node(NodeKind.PRECONDITION, enabled_predicate(enabler, feature),
                               f"uses {' '.join(feature)}, which {enabler.name} turns on",
                               CONF_USES))
    return nodes


def _takes_checked(tool: ToolSpec, values: Sequence[tuple[str, ...]]) -> list[InferredNode]:
    if validated_value(tool) is not None:
        return []
    names = [name_tokens(f.path.rsplit(".", 1)[-1]) for f in input_fields(tool.input_schema)]
    return [_node(NodeKind.PRECONDITION, valid_predicate(value),
                  f"takes a {' '.join(value)}, which a validator checks", CONF_NEEDS_VALID)
            for value in dict.fromkeys(values)
            if any(len(n) >= len(value) and n[-len(value):] == value for n in names)]


# ----------------------------------------------------------------------------- helpers
def _after(tokens: Sequence[str], verbs: Sequence[tuple[str, ...]]) -> tuple[str, ...] | None:
    """The tokens after a leading verb phrase of ``verbs``; None when none leads."""
    for verb in verbs:
        if tuple(tokens[:len(verb)]) == verb:
            return tuple(tokens[len(verb):])
    return None


def _contains(tokens: Sequence[str], part: Sequence[str]) -> bool:
    n = len(part)
    return any(tuple(tokens[k:k + n]) == tuple(part) for k in range(len(tokens) - n + 1))


def _node(kind: NodeKind, path: str, said: str, confidence: float,
          evidence: Evidence = Evidence.NAME) -> InferredNode:
    return InferredNode(kind, path, "boolean", f"{kind.value}: {path} ({said})", evidence,
                        confidence)
