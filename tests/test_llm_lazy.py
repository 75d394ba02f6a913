"""The deterministic core does not load the LLM stack: importing the LLM protocol, the LLM
package root or any core module leaves the OpenAI SDK unimported; only the client loads it."""

from __future__ import annotations

import subprocess
import sys

import pytest

CORE = (
    "hyperplan.llm", "hyperplan.llm.types", "hyperplan.llm.budget", "hyperplan.llm.scripted",
    "hyperplan.graph.build", "hyperplan.retrieve.context_graph", "hyperplan.plan",
    "hyperplan.plan.doe", "hyperplan.plan.planner", "hyperplan.execute",
    "hyperplan.execute.agent", "hyperplan.connect", "hyperplan.search.mcts",
    "hyperplan_bench.eval.chains", "hyperplan_bench.eval.harness", "hyperplan.demo_world",
)


def _loads_openai(code: str) -> bool:
    probe = f"import sys\n{code}\nprint(int('openai' in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True).stdout
    return out.strip() == "1"


@pytest.mark.parametrize("module", CORE)
def test_core_module_does_not_import_openai(module):
    assert not _loads_openai(f"import {module}")


def test_package_names_load_lazily_and_the_client_loads_the_sdk():
    assert not _loads_openai("from hyperplan.llm import LLM, Budget, ScriptedLLM, Usage")
    assert _loads_openai("from hyperplan.llm import OpenAICompatibleLLM")
    import hyperplan.llm as llm

    assert set(llm.__all__) == set(dir(llm))
    assert all(getattr(llm, name) is not None for name in llm.__all__)


def test_the_complete_signature_is_written_once():
    import inspect

    from hyperplan.execute.traced_llm import TracedLLM
    from hyperplan.llm import LLM, BaseLLM, OpenAICompatibleLLM, ScriptedLLM

    for cls in (OpenAICompatibleLLM, ScriptedLLM, TracedLLM):
        assert cls.complete is BaseLLM.complete and cls.acomplete is BaseLLM.acomplete
    assert inspect.signature(BaseLLM.complete) == inspect.signature(LLM.complete)
    assert inspect.signature(BaseLLM.acomplete) == inspect.signature(LLM.acomplete)
    assert isinstance(ScriptedLLM([]), LLM)


def test_the_old_name_of_offered_tool_still_imports():
    """``ToolSpec`` now means only hyperplan.catalog.ToolSpec; the LLM layer's old name for a
    tool definition sent to the model resolves for one release, with a DeprecationWarning."""
    import hyperplan.llm as llm
    import hyperplan.llm.types as types
    from hyperplan.llm import OfferedTool

    for module in (types, llm):
        with pytest.warns(DeprecationWarning, match=r"ToolSpec is renamed .*OfferedTool"):
            assert module.ToolSpec is OfferedTool
    assert "ToolSpec" not in llm.__all__ and "ToolSpec" not in dir(llm)
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchName'"):
        types.NoSuchName  # noqa: B018


def test_lazy_exports_check_their_table():
    """One table per package root (hyperplan._lazy): a name exported twice, or renamed to a
    name the package does not export, is an error when the package loads."""
    from hyperplan._lazy import by_submodule, lazy_exports

    assert by_submodule({"a": ("X", "y"), "b": ("Z",)}) == {"X": "a", "y": "a", "Z": "b"}
    with pytest.raises(ValueError, match="'X' is exported from both 'a' and 'b'"):
        by_submodule({"a": ("X",), "b": ("X",)})
    with pytest.raises(ValueError, match=r"renamed to names it does not export: \['New'\]"):
        lazy_exports("pkg", {"X": "a"}, renamed={"Old": "New"})
