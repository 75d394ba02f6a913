"""The Python-callables importer on the shapes real modules have: NumPy-style docstrings, C
builtins, aliases and bound methods in ``__all__``, hints that cannot be evaluated."""

from __future__ import annotations

import inspect
import math
import types
import warnings
from collections.abc import Callable
from typing import Any

import pytest

from hyperplan.errors import CatalogError
from hyperplan.graph.build import build_graph
from hyperplan.graph.schema_paths import SchemaWarning
from hyperplan.importers.python_callables import (
    Docstring,
    get_callable,
    load_python_callables,
    load_python_target,
    module_functions,
    parse_docstring,
)

# --- NumPy-style docstrings ------------------------------------------------------------------

NUMPY_DOC = """Blend two colour channels into one.

The blend is linear; values are clipped to [0, 1].

Parameters
----------
base : float
    Intensity of the lower layer,
    between 0 and 1.
top, alpha : float, optional
    Intensity of the upper layer
    and its opacity.
mode : {'mix', 'screen'}
    How the layers combine.

Returns
-------
float
    The blended intensity.

Raises
------
ValueError
    If a channel is negative.

Examples
--------
>>> blend(0.2, 0.4)
0.3
"""


def test_numpy_parameters_shared_and_multiline() -> None:
    doc = parse_docstring(NUMPY_DOC)
    assert doc.summary == "Blend two colour channels into one."
    assert doc.params == {
        "base": "Intensity of the lower layer, between 0 and 1.",
        "top": "Intensity of the upper layer and its opacity.",
        "alpha": "Intensity of the upper layer and its opacity.",
        "mode": "How the layers combine.",
    }
    assert doc.returns == "The blended intensity."  # Raises / Examples after it are not read
    assert doc.returns_section


def test_numpy_named_returns_and_other_sections() -> None:
    doc = parse_docstring(
        "Summarise a sample.\n\nParameters\n----------\nsample : list of float\n"
        "    The observations.\n\nOther Parameters\n----------------\n"
        "ddof : int\n    Delta degrees of freedom.\n    .. versionadded:: 2.1\n"
        "        Before, always 0.\n\nReturns\n-------\n"
        "mean : float\n    Centre of the sample.\nspread : float\n    Its standard deviation.\n"
        "\nNotes\n-----\nmean : not a return, a note.\n"
    )
    assert doc.params == {"sample": "The observations.", "ddof": "Delta degrees of freedom."}
    assert doc.returns == "mean: Centre of the sample. spread: Its standard deviation."
    single = parse_docstring("Centre.\n\nReturns\n-------\nmean : float\n    The centre.\n")
    assert single.returns == "The centre."
    bare = parse_docstring("Count.\n\nReturns\n-------\nint\n")  # only a type: the type
    assert bare.returns == "int"


def test_numpy_yields_stacked_entries_and_untyped_names() -> None:
    doc = parse_docstring(
        "Walk a tree.\n\nParameters\n----------\nroot\n    Where to start.\n"
        "left : str\nright : str\n    Labels of the two branches.\n"
        "depth : int\n\n*paths : str\n    Extra paths.\n\n"
        "Yields\n------\nstr\n    Each visited label.\n"
    )
    assert doc.params == {
        "root": "Where to start.",
        "left": "Labels of the two branches.",  # stacked over the next description
        "right": "Labels of the two branches.",
        "depth": "int",  # documented without a description: its type
        "paths": "Extra paths.",
    }
    assert doc.returns == "Each visited label."
    nothing = parse_docstring("Reset.\n\nReturns\n-------\nNone\n")
    assert nothing.returns == "" and not nothing.returns_section


def test_numpy_summary_stops_at_a_header() -> None:
    doc = parse_docstring("Scale values\nby a factor.\nParameters\n----------\nx : float\n"
                          "    The value.\n")
    assert doc.summary == "Scale values by a factor."
    assert doc.params == {"x": "The value."}


def test_numpy_indented_docstring_as_written_in_code() -> None:
    def spread(values, ddof=0):  # type: ignore[no-untyped-def]
        """Standard deviation of some values.

        Parameters
        ----------
        values : sequence of float
            The observations,
            at least two.
        ddof : int, optional
            Delta degrees of freedom.

        Returns
        -------
        sd : float
            The standard deviation.

        See Also
        --------
        statistics.stdev : the same in the standard library.
        """
        return 0.0

    cleaned = parse_docstring(inspect.getdoc(spread) or "")
    raw = parse_docstring(spread.__doc__ or "")  # not cleaned: indentation is relative
    assert cleaned.params == raw.params == {
        "values": "The observations, at least two.",
        "ddof": "Delta degrees of freedom.",
    }
    assert cleaned.returns == raw.returns == "The standard deviation."
    tool = load_python_callables([spread], source="unit").get("spread")
    assert tool.description == "Standard deviation of some values."
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "values": {"description": "The observations, at least two."},
            "ddof": {"type": "integer", "description": "Delta degrees of freedom.", "default": 0},
        },
        "required": ["values"],
    }
    assert tool.output_schema == {"description": "The standard deviation."}


GOOGLE_DOC = """Book a table.

Args:
    place (str): The restaurant,
        by name.
    guests: How many people.

Returns:
    The booking id.
"""

REST_DOC = """Cancel a booking.

:param booking_id: The booking to cancel.
:param str reason: Why,
    in a few words.
:returns: Whether it was cancelled.
"""


def test_google_and_rest_parse_as_before() -> None:
    assert parse_docstring(GOOGLE_DOC) == Docstring(
        "Book a table.",
        {"place": "The restaurant, by name.", "guests": "How many people."},
        "The booking id.",
        True,
    )
    assert parse_docstring(REST_DOC) == Docstring(
        "Cancel a booking.",
        {"booking_id": "The booking to cancel.", "reason": "Why, in a few words."},
        "Whether it was cancelled.",
        True,
    )
    # "Parameters:" with a colon and no dashes stays Google
    colon = parse_docstring("Pay.\n\nParameters:\n    amount: The sum.\n")
    assert colon.params == {"amount": "The sum."}
    clause = parse_docstring("Pay the bill; returns the receipt id.")
    assert (clause.returns, clause.returns_section) == ("the receipt id", False)


# --- documented returns without an annotation --------------------------------------------------


def untyped_total(prices):  # type: ignore[no-untyped-def]
    """Add up prices.

    Args:
        prices: The prices to add.

    Returns:
        The sum of the prices.
    """
    return sum(prices)


def untyped_clause(prices):  # type: ignore[no-untyped-def]
    """Add up prices; returns the sum."""
    return sum(prices)


def test_documented_return_without_annotation_gives_an_output() -> None:
    cat = load_python_callables([untyped_total, untyped_clause], source="unit")
    assert cat.get("untyped_total").output_schema == {"description": "The sum of the prices."}
    assert cat.get("untyped_clause").output_schema is None  # a summary clause alone: unchanged
    graph = build_graph(cat, embedder=None)
    assert graph is not None


# --- modules: builtins, aliases, bound methods, skipped routines --------------------------------


class _Tally:
    def __init__(self) -> None:
        self.count = 0

    def bump(self, step: int = 1) -> int:
        """Increase the tally.

        Args:
            step: How much to add.
        """
        self.count += step
        return self.count


_TALLY = _Tally()


def _area_impl(width: float, height: float) -> float:
    """Area of a rectangle."""
    return width * height


def hypotenuse(a: float, b: float, /) -> float:
    """Length of the hypotenuse."""
    return math.hypot(a, b)


def no_signature(x: int) -> int:
    """A routine inspect cannot give a signature for."""
    return x


def also_no_signature() -> None:
    """Another one."""


for _func in (no_signature, also_no_signature):
    _func.__signature__ = "not a signature"  # type: ignore[attr-defined]


def uses_missing(shape: MissingShape, count: int) -> MissingResult:  # type: ignore[name-defined]  # noqa: F821
    """Build shapes whose types are only imported for type checkers."""
    return None


def _fake_module(name: str, **members: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for key, value in members.items():
        setattr(module, key, value)
    module.__all__ = list(members)  # type: ignore[attr-defined]
    return module


def test_module_lists_routines_once_under_their_exported_names() -> None:
    module = _fake_module(
        "unit_geometry",
        area=_area_impl,
        surface=_area_impl,  # alias: the same object
        root=math.sqrt,  # a C builtin with a signature
        hypotenuse=hypotenuse,
        bump=_TALLY.bump,  # bound method of a module-level object
        Tally=_Tally,  # classes are not listed
    )
    assert module_functions(module) == [_area_impl, math.sqrt, hypotenuse, _TALLY.bump]
    cat = load_python_callables(module, source="unit-geo")
    assert cat.names() == ["area", "root", "hypotenuse", "bump"]
    assert cat.get("root").required_inputs == ("x",)
    assert list(cat.get("bump").input_schema["properties"]) == ["step"]
    assert cat.get("bump").metadata == {"module": "unit_geometry", "qualname": "bump"}
    assert cat.get("area").metadata == {"module": __name__, "qualname": "_area_impl"}
    # positional-only parameters are passed by keyword, as tool arguments are
    assert get_callable(cat.get("root"))(x=9.0) == 3.0
    assert get_callable(cat.get("hypotenuse"))(a=3.0, b=4.0) == 5.0
    build_graph(cat, embedder=None)


def test_positional_only_wrapper_fills_skipped_defaults() -> None:
    def span(start: int, stop: int = 10, step: int = 1, /) -> list[int]:
        """Numbers from start to stop."""
        return list(range(start, stop, step))

    call = get_callable(load_python_callables([span], source="unit-span").get("span"))
    assert call(start=0, step=5) == [0, 5]
    assert call(start=8) == [8, 9]


def test_module_skips_routines_without_signature_in_one_warning() -> None:
    module = _fake_module(
        "unit_skips", broken=no_signature, also_broken=also_no_signature, hypotenuse=hypotenuse
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cat = load_python_callables(module, source="unit-skips")
    assert cat.names() == ["hypotenuse"]
    assert len(caught) == 1 and issubclass(caught[0].category, SchemaWarning)
    text = str(caught[0].message)
    assert "unit-skips" in text and "'signature'" in text
    assert "tool 'broken'" in text and "tool 'also_broken'" in text
    with pytest.raises(CatalogError, match=r"'no_signature'.*'signature'"):
        load_python_callables([no_signature])  # listed explicitly: an error


def test_unresolvable_hints_degrade_in_modules_and_targets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = _fake_module("unit_hints", uses_missing=uses_missing)
    monkeypatch.setitem(__import__("sys").modules, "unit_hints", module)
    with pytest.warns(SchemaWarning, match=r"unit_hints.*'uses_missing'.*'parameters.shape'"):
        cat = load_python_target("unit_hints")
    tool = cat.get("uses_missing")
    assert tool.input_schema["properties"] == {"shape": {}, "count": {"type": "integer"}}
    assert tool.output_schema == {}
    with pytest.warns(SchemaWarning, match="'returns'"):
        assert load_python_target("unit_hints:uses_missing").names() == ["uses_missing"]
    with pytest.raises(CatalogError, match=r"'uses_missing'.*'annotations'"):
        load_python_callables([uses_missing])  # listed explicitly: an error, as before


def test_module_without_functions_is_a_clean_error(monkeypatch: pytest.MonkeyPatch) -> None:
    module = _fake_module("unit_empty", Tally=_Tally)
    monkeypatch.setitem(__import__("sys").modules, "unit_empty", module)
    with pytest.raises(CatalogError, match=r"unit_empty.*'module'.*no public function"):
        load_python_target("unit_empty")


def scale(value: float, factor: float = 2.0) -> float:
    """scale(value, factor=2.0) -> float

    Multiply a value by a factor.
    """
    return value * factor


def test_leading_call_line_is_not_the_summary() -> None:
    funcs: list[Callable[..., Any]] = [scale]
    tool = load_python_callables(funcs, source="unit").get("scale")
    assert tool.description == "Multiply a value by a factor."


def _moved(func: Callable[..., Any], module: str) -> Callable[..., Any]:
    """A copy of ``func`` that says it was defined in ``module``."""
    copy = types.FunctionType(func.__code__, func.__globals__, func.__name__)
    copy.__module__ = module
    return copy


def double(x: int) -> int:
    """Twice x."""
    return 2 * x


def test_module_without_all_lists_its_own_and_reexported_routines() -> None:
    package = types.ModuleType("unit_pkg")
    package.__path__ = []  # a package
    package.double = _moved(double, "unit_pkg.helpers")  # type: ignore[attr-defined]
    package.elsewhere = _moved(double, "unit_other")  # type: ignore[attr-defined]
    assert load_python_callables(package, source="unit-pkg").names() == ["double"]
    plain = types.ModuleType("unit_calc")
    plain.double = _moved(double, "_unit_calc")  # type: ignore[attr-defined]  # C twin
    plain.helper = _moved(double, "_unit_misc")  # type: ignore[attr-defined]
    plain.nested = _moved(double, "unit_calc.sub")  # type: ignore[attr-defined]  # not a package
    assert load_python_callables(plain, source="unit-calc").names() == ["double"]


def test_numpy_plain_types_type_unannotated_parameters() -> None:
    from hyperplan.importers.docstrings import doc_type_schema

    assert doc_type_schema("int, optional") == {"type": "integer"}
    assert doc_type_schema("float") == {"type": "number"}
    assert doc_type_schema("str, default 'mean'") == {"type": "string"}
    for loose in ("array_like", "int or None", "{'a', 'b'}", "ndarray", ""):
        assert doc_type_schema(loose) == {}

    def clip(values, low, high=1.0, axis=None, mode="raise", how=None):  # type: ignore[no-untyped-def]
        """Clip values.

        Parameters
        ----------
        values : array_like
            The values.
        low : float
            Lower bound.
        high : float, optional
            Upper bound.
        axis : int, optional
            Axis; all when None.
        mode : str, optional
            What to do.
        how : bool, optional
            Not typed by the docstring: its default is None.
        """
        return values

    props = load_python_callables([clip]).get("clip").input_schema["properties"]
    assert props["values"] == {"description": "The values."}
    assert props["low"] == {"type": "number", "description": "Lower bound."}
    assert props["high"] == {"type": "number", "description": "Upper bound.", "default": 1.0}
    assert props["axis"] == {"description": "Axis; all when None.", "default": None}
    assert props["mode"]["type"] == "string" and props["how"].get("type") is None
