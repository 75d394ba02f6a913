"""Synthetic catalogs and ``hyperplan bench links``: determinism, sizes, JSON contract and
sub-quadratic growth of link inference (counted, not timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from hyperplan.cli import app
from hyperplan.cli.bench_cmds import measure_links, parse_sizes
from hyperplan.eval.synthetic import (
    TOOLS_PER_APP,
    id_inputs_with_producer,
    synthetic_catalog,
    synthetic_expectations,
)
from hyperplan.graph.build import build_graph
from hyperplan.graph.effects import namespace
from hyperplan.graph.schema_paths import input_fields, output_fields
from hyperplan.graph.text import name_tokens


def _dump(catalog):
    return json.dumps([t.model_dump() for t in catalog.tools], sort_keys=True)


def test_same_seed_same_catalog_other_seed_other_catalog():
    assert _dump(synthetic_catalog(300, seed=3)) == _dump(synthetic_catalog(300, seed=3))
    assert _dump(synthetic_catalog(300, seed=3)) != _dump(synthetic_catalog(300, seed=4))


def test_catalog_is_identical_across_hash_seeds():
    code = ("import hashlib, json; from hyperplan.eval.synthetic import synthetic_catalog; "
            "c = synthetic_catalog(250, seed=1); print(hashlib.sha256(json.dumps("
            "[t.model_dump() for t in c.tools], sort_keys=True).encode()).hexdigest())")
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout
        for h in (1, 2)
    }
    assert len(digests) == 1


@pytest.mark.parametrize("n", [0, 1, 2, 7, 39, 40, 41, 333, 1000])
def test_exact_sizes_unique_names(n):
    catalog = synthetic_catalog(n)
    assert len(catalog) == n
    assert len(set(catalog.names())) == n


def test_catalog_shape():
    catalog = synthetic_catalog(2000, seed=0)
    apps = {namespace(t) for t in catalog.tools}
    assert abs(len(apps) - 2000 / TOOLS_PER_APP) <= 1
    assert all(a.startswith("app") and a[3:].isdigit() for a in apps)
    names = catalog.names()
    for verb in ("login", "show_", "search_", "create_", "update_", "delete_"):
        assert sum(verb in n for n in names) >= 20, verb
    show = next(t for t in catalog.tools if ".show_" in t.name and "profile" not in t.name)
    entity = show.name.split(".show_")[1]
    required = [name_tokens(f.path) for f in input_fields(show.input_schema) if f.required]
    assert (*entity.split("_"), "id") in required, show.input_schema
    paths = [f.path for t in catalog.tools for f in output_fields(t.output_schema)]
    assert any("[]." in p and p.endswith("_id") for p in paths)  # orders[].order_id
    assert any(p.count(".") >= 2 and "[]" in p for p in paths)  # orders[].customer.email
    types = {f.type for t in catalog.tools for f in input_fields(t.input_schema)}
    assert {"string", "integer", "number", "boolean", "array"} <= types
    described = [f.description for t in catalog.tools for f in input_fields(t.input_schema)]
    assert 0.5 < sum(bool(d) for d in described) / len(described) < 1.0
    # vocabulary grows with the catalog
    def entities(c):
        return {t.name.split(".show_")[1] for t in c.tools if ".show_" in t.name}

    assert len(entities(synthetic_catalog(8000))) > 1.5 * len(entities(catalog))


def test_expectations_and_coverage():
    catalog = synthetic_catalog(400, seed=2)
    expectations = synthetic_expectations(catalog)
    assert len(expectations) > 100
    for exp in expectations:
        app = exp.tool.split(".")[0]
        assert exp.input.lower().endswith("id")
        assert exp.tool not in exp.producers
        assert all(p.split(".")[0] == app for p in exp.producers)
    by_tool = {e.tool: e for e in expectations}
    show = next(t for t in by_tool if ".show_" in t and "profile" not in t)
    entity = show.split(".show_")[1]
    assert any(".search_" in p or f".create_{entity}" in p for p in by_tool[show].producers)
    graph = build_graph(catalog)  # names and types only
    satisfied = id_inputs_with_producer(graph, expectations)
    assert satisfied / len(expectations) > 0.9


def test_parse_sizes():
    assert parse_sizes("1000, 10k,100_000") == [1000, 10000, 100000]


def test_cli_bench_links_json():
    result = CliRunner().invoke(app, ["bench", "links", "--tools", "200,400", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bench"] == "links"
    assert data["embedder"] == "hashing"
    assert data["seconds"] > 0
    runs = data["runs"]
    assert [r["tools"] for r in runs] == [200, 400]
    for run in runs:
        assert "error" not in run
        assert run["nodes"] > 5 * run["tools"]
        assert run["tools"] <= run["links"] <= run["candidate_pairs"]
        assert run["seconds"] > 0
        assert 50 < run["peak_rss_mb"] < 4000
        assert run["id_inputs"] > 0.2 * run["tools"]
        assert 0.9 <= run["id_inputs_with_producer"] <= 1.0
    assert runs[1]["nodes"] > runs[0]["nodes"]
    assert runs[1]["links"] > runs[0]["links"]


def test_link_inference_grows_sub_quadratically():
    small = measure_links(500, seed=0, embedder="none")
    large = measure_links(2000, seed=0, embedder="none")
    assert large["tools"] == 4 * small["tools"]
    links_per_tool = (small["links"] / small["tools"], large["links"] / large["tools"])
    assert links_per_tool[1] < 2 * links_per_tool[0]
    # 4x the tools: quadratic blocking would give 16x the candidate pairs
    assert large["candidate_pairs"] < 8 * small["candidate_pairs"]
    assert large["id_inputs_with_producer"] > 0.9
