"""Link overrides (YAML/JSON) and strengthening from observed traces."""

from __future__ import annotations

import json
import re
from importlib.resources import files

import pytest
import yaml

from hyperplan.errors import GraphError, HyperplanError, OverrideError
from hyperplan.graph import ObservedFlow, apply_overrides, build_graph, strengthen_from_traces
from hyperplan.graph.overrides import LinkOverrides, load_overrides
from hyperplan.importers.openai_functions import load_openai_functions

CATALOG = files("hyperplan") / "examples" / "music_catalog.json"
TOKEN = ("music.login:out:access_token", "music.show_song:in:access_token")
AUTH = ("music.login:eff:music.authenticated", "music.show_song:pre:music.authenticated")
TITLE = ("music.search_songs:out:[].title", "music.create_playlist:in:title")
NEW = ("music.login:out:token_type", "mail.send_email:in:subject")  # never inferred


@pytest.fixture(scope="module")
def demo():
    return build_graph(load_openai_functions(CATALOG))


@pytest.fixture(autouse=True)
def _new_is_absent(demo):
    assert NEW not in weights(demo) and {TOKEN, AUTH, TITLE} <= set(weights(demo))


def weights(graph):
    return {(graph.node_name(lk.source), graph.node_name(lk.target)): lk.weight
            for lk in graph.links()}


def evidence(graph, pair):
    src, dst = graph.node(pair[0]).id, graph.node(pair[1]).id
    return next(lk.evidence for lk in graph.links_into(dst) if lk.source == src)


def write(tmp_path, doc, fmt):
    path = tmp_path / f"overrides.{fmt}"
    path.write_text(json.dumps(doc) if fmt == "json" else yaml.safe_dump(doc), "utf-8")
    return path


def load_text(tmp_path, text, suffix=".yaml"):
    path = tmp_path / f"text{suffix}"
    path.write_text(text, "utf-8")
    return load_overrides(path)


def entry(pair, **extra):
    return {"from": pair[0], "to": pair[1], **extra}


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_add_remove_reweight(demo, tmp_path, fmt):
    doc = {
        "add": [entry(NEW, weight=0.8)],
        "remove": [entry(TOKEN)],
        "reweight": [entry(TITLE, weight=0.3)],
    }
    overrides = load_overrides(write(tmp_path, doc, fmt))
    assert overrides == LinkOverrides(add=((*NEW, 0.8),), remove=(TOKEN,),
                                      reweight=((*TITLE, 0.3),))
    before, graph = weights(demo), apply_overrides(demo, overrides)
    after = weights(graph)
    assert after[NEW] == 0.8 and evidence(graph, NEW) == "override"
    assert TOKEN not in after and AUTH in after
    assert after[TITLE] == 0.3 and before[TITLE] > 0.5
    assert set(after) == set(before) - {TOKEN} | {NEW}
    assert all(after[k] == w for k, w in before.items() if k not in (TOKEN, TITLE))
    show, login = graph.tool("music.show_song").id, graph.tool("music.login").id
    assert login in graph.upstream(show)  # still through the authenticated precondition
    mail = graph.tool("mail.send_email").id
    assert graph.producers_of(graph.node(NEW[1]).id) == [(login, 0.8)]
    assert mail in graph.downstream(login) and mail not in demo.downstream(login)


def test_add_defaults_to_weight_one_and_overwrites_existing(demo, tmp_path):
    graph = apply_overrides(demo, LinkOverrides(add=((*NEW, 1.0), (*TITLE, 0.9))))
    assert weights(graph)[NEW] == 1.0 and weights(graph)[TITLE] == 0.9
    assert load_text(tmp_path, "add:\n  - {from: a, to: b}\n") == LinkOverrides(
        add=(("a", "b", 1.0),))


def test_add_does_not_lower_existing_link(demo):
    graph = apply_overrides(demo, LinkOverrides(add=((*TOKEN, 0.2),)))
    assert weights(graph)[TOKEN] == 1.0


def test_remove_by_tool_pair_is_directional(demo, tmp_path):
    doc = {"remove": [{"from_tool": "music.login", "to_tool": "music.show_song"}]}
    overrides = load_overrides(write(tmp_path, doc, "yaml"))
    assert overrides.remove_tools == (("music.login", "music.show_song"),) and not overrides.remove
    graph = apply_overrides(demo, overrides)
    login, show = graph.tool("music.login").id, graph.tool("music.show_song").id
    assert login not in graph.upstream(show)
    assert graph.downstream(login) == demo.downstream(login) - {show}
    assert demo.n_links - graph.n_links == 2  # access_token and authenticated
    assert graph.upstream(show) == demo.upstream(show) - {login}


def test_order_remove_then_reweight_then_add(demo):
    graph = apply_overrides(demo, LinkOverrides(remove=(TOKEN,), add=((*TOKEN, 0.4),)))
    assert weights(graph)[TOKEN] == 0.4
    with pytest.raises(OverrideError, match="no link"):
        apply_overrides(demo, LinkOverrides(remove=(TOKEN,), reweight=((*TOKEN, 0.4),)))
    with pytest.raises(OverrideError, match=re.escape(NEW[0])):
        apply_overrides(demo, LinkOverrides(reweight=((*NEW, 0.5),)))


@pytest.mark.parametrize("section", ["add", "remove", "reweight"])
def test_unknown_node_names_it(demo, tmp_path, section):
    bad = "music.login:out:refresh_token"
    path = write(tmp_path, {section: [entry((bad, TOKEN[1]), weight=0.5)]}, "yaml")
    with pytest.raises(OverrideError, match=f"{section}: unknown schema node '{re.escape(bad)}'"):
        apply_overrides(demo, load_overrides(path))


def test_unknown_tool_in_remove_is_override_error(demo):
    with pytest.raises(OverrideError, match=re.escape("'music.nope'")):
        apply_overrides(demo, LinkOverrides(remove_tools=(("music.nope", "music.show_song"),)))


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"add": [entry(TOKEN), {"from": TOKEN[0]}]}, r"add\[1\] needs string fields"),
        ({"add": [entry(TOKEN, weight=0)]}, r"add\[0\] weight must be a number in \(0, 1\]"),
        ({"reweight": [entry(TOKEN, weight=0.2), entry(TOKEN, weight=1.5)]}, r"reweight\[1\]"),
        ({"reweight": [entry(TOKEN, weight="high")]}, r"reweight\[0\] weight"),
        ({"remove": [{"from": 3, "to": TOKEN[1]}]}, r"remove\[0\] needs string fields"),
        ({"remove": [{"from_tool": "music.login"}]}, r"remove\[0\] needs string fields"),
        ({"add": {"from": "a", "to": "b"}}, "section 'add' must be a list of mappings"),
        ({"remove": ["a -> b"]}, "section 'remove' must be a list of mappings"),
        ({"ad": []}, r"unknown section\(s\) \['ad'\]"),
        ([entry(TOKEN)], "expected a mapping"),
    ],
)
@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_malformed_entries(tmp_path, doc, message, fmt):
    path = write(tmp_path, doc, fmt)
    with pytest.raises(OverrideError, match=message) as info:
        load_overrides(path)
    assert str(path) in str(info.value)


def test_malformed_remove_reports_position_in_section(tmp_path):
    doc = {"remove": [{"from_tool": "music.login", "to_tool": "music.show_song"},
                      {"from": TOKEN[0]}]}
    with pytest.raises(OverrideError, match=r"remove\[1\]"):
        load_overrides(write(tmp_path, doc, "yaml"))


def test_unparsable_and_missing_files(tmp_path):
    with pytest.raises(OverrideError, match="malformed override file"):
        load_text(tmp_path, "add: [\n")
    with pytest.raises(OverrideError, match="malformed override file"):
        load_text(tmp_path, "{add: []}", suffix=".json")
    with pytest.raises(OverrideError, match="not found"):
        load_overrides(tmp_path / "absent.yaml")
    assert load_text(tmp_path, "") == LinkOverrides()


def test_build_graph_applies_override_file(demo, tmp_path):
    path = write(tmp_path, {"add": [entry(NEW, weight=0.7)], "remove": [entry(TOKEN)]}, "yaml")
    graph = build_graph(load_openai_functions(CATALOG), overrides=path)
    assert weights(graph)[NEW] == 0.7 and TOKEN not in weights(graph)
    assert graph.n_links == demo.n_links and graph.metadata["source"] == str(CATALOG)


def test_strengthen_existing_and_new_links(demo):
    flows = [
        ObservedFlow("music.search_songs", "[].title", "music.create_playlist", "title"),
        ObservedFlow("music.login", "token_type", "mail.send_email", "subject"),
        ObservedFlow("music.login", "token_type", "mail.send_email", "subject"),
    ]
    graph = strengthen_from_traces(demo, flows, rate=0.4)
    after, before = weights(graph), weights(demo)
    assert after[TITLE] == pytest.approx(before[TITLE] + 0.4 * (1 - before[TITLE]))
    assert after[NEW] == pytest.approx(0.4 + 0.4 * 0.6)  # added at rate, then raised again
    assert evidence(graph, TITLE) == evidence(graph, NEW) == "trace"
    assert {k: w for k, w in after.items() if k not in (TITLE, NEW)} == {
        k: w for k, w in before.items() if k != TITLE}
    full = strengthen_from_traces(demo, flows[:1], rate=1.0)
    assert weights(full)[TITLE] == 1.0


@pytest.mark.parametrize(
    "flow",
    [
        ObservedFlow("music.nope", "title", "music.create_playlist", "title"),
        ObservedFlow("music.search_songs", "[].nope", "music.create_playlist", "title"),
        ObservedFlow("music.search_songs", "[].title", "music.create_playlist", "nope"),
    ],
)
def test_strengthen_unknown_nodes_raise(demo, flow):
    with pytest.raises(GraphError, match="nope"):
        strengthen_from_traces(demo, [flow])


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.5])
def test_strengthen_rate_must_be_in_unit_interval(demo, rate):
    with pytest.raises(ValueError, match="rate"):
        strengthen_from_traces(demo, [], rate=rate)


def test_adding_link_from_input_node_is_rejected(demo):
    with pytest.raises(HyperplanError, match="from an output"):
        apply_overrides(demo, LinkOverrides(add=(("music.login:in:password", TOKEN[1], 1.0),)))
