"""Semantic functions (Parrot §4.1): a prompt template whose ``{{input:x}}``
and ``{{output:y}}`` placeholders are semantic variables.

``@semantic_function`` turns a Python function whose docstring (or
``template=``) is the template into one that, called inside a program,
submits the call at once and returns its output variables as futures. The
parameters are the template's inputs, by name; the return annotation says
how many outputs there are and what type each value is read as
(``Var[int]``). The router checks the template again (as the operator checks
an AgentApp's functions) and names the field if it is wrong.
"""

from __future__ import annotations

import inspect
import json
import re
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_PLACEHOLDER = re.compile(r"\{\{\s*(input|output)\s*:\s*([^}]*?)\s*\}\}")


def template_variables(template: str) -> tuple[list[str], list[str]]:
    """The template's input names (first use order) and output names (template order)."""
    inputs: list[str] = []
    outputs: list[str] = []
    for kind, name in _PLACEHOLDER.findall(template):
        if kind == "input" and name not in inputs:
            inputs.append(name)
        elif kind == "output":
            outputs.append(name)
    return inputs, outputs


@dataclass(frozen=True)
class Output:
    """Generation settings of one output (absent: the router's defaults, capped by the app)."""

    max_tokens: int | None = None
    temperature: float | None = None


def _reader(annotation: Any) -> tuple[str, Callable[[str], Any]]:
    """How a value is read for a ``Var[T]`` annotation: ``(type name, parser)``."""
    args = typing.get_args(annotation)
    target = args[0] if args else str
    if target is str or target is Any:
        return "str", lambda v: v
    if target is bool:
        return "bool", _parse_bool
    if target in (int, float):
        return target.__name__, lambda v: target(v.strip())
    return "JSON value", json.loads


def _parse_bool(value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "yes", "1"):
        return True
    if v in ("false", "no", "0"):
        return False
    raise ValueError("expected true/false, yes/no or 1/0")


class SemanticFunction(Generic[P, R]):
    """A semantic function; call it inside ``with client.program():`` (or ``async with``)."""

    def __init__(
        self,
        name: str,
        template: str | None,
        signature: inspect.Signature | None,
        *,
        outputs: Mapping[str, Output],
        returns: Any,
        tools: bool | tuple[str, ...],
        policy: Mapping[str, Any] | None,
        inputs: tuple[str, ...] = (),
        output_names: tuple[str, ...] = (),
    ) -> None:
        if not VARIABLE_NAME.match(name):
            raise ValueError(f"semantic function name {name!r} must match {VARIABLE_NAME.pattern}")
        self.name = name
        self.template = template
        self.inputs, self.output_names = template_variables(template) if template is not None else (list(inputs), list(output_names))
        if not self.output_names:
            raise ValueError(f"{name}: the template needs at least one {{{{output:name}}}} placeholder")
        self._signature = signature
        if signature is not None:
            params = list(signature.parameters)
            missing = [i for i in self.inputs if i not in params]
            unused = [p for p in params if p not in self.inputs]
            if missing or unused:
                raise TypeError(f"{name}: the parameters must be the template's inputs {self.inputs}; missing {missing}, not in the template {unused}")
        unknown = [o for o in outputs if o not in self.output_names]
        if unknown:
            raise ValueError(f"{name}: outputs {unknown} have no {{{{output:...}}}} placeholder (the template has {self.output_names})")
        self.settings = {o: outputs.get(o, Output()) for o in self.output_names}
        self.tools = tools
        self.policy = dict(policy) if policy is not None else None
        self.readers, self.kind = self._readers(returns)

    def _readers(self, returns: Any) -> tuple[list[tuple[str, Callable[[str], Any]]], str | None]:
        """Per output: how its value is read; and the variable kind the annotation names (``Var``/``AsyncVar``), if any."""
        n = len(self.output_names)
        if returns is inspect.Signature.empty or returns is None:
            return [("str", lambda v: v)] * n, None
        parts = list(typing.get_args(returns)) if typing.get_origin(returns) is tuple else [returns]
        if len(parts) != n:
            raise TypeError(f"{self.name}: the return annotation names {len(parts)} value(s); the template has {n} output(s) {self.output_names}")
        kinds = {getattr(typing.get_origin(p) or p, "__name__", "") for p in parts}
        return [_reader(p) for p in parts], kinds.pop() if len(kinds) == 1 else None

    @property
    def defined(self) -> bool:
        """Defined in code (the request carries it), not one of the AgentApp's own."""
        return self.template is not None

    def definition(self) -> dict[str, Any]:
        """The function as a program request's ``functions`` entry."""
        outputs = []
        for name, s in self.settings.items():
            o: dict[str, Any] = {"name": name}
            if s.max_tokens is not None:
                o["maxTokens"] = s.max_tokens
            if s.temperature is not None:
                o["temperature"] = s.temperature
            outputs.append(o)
        return {"name": self.name, "template": self.template, "outputs": outputs, "tools": list(self.tools) if isinstance(self.tools, tuple) else self.tools}

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by template input."""
        if self._signature is None:
            if args:
                raise TypeError(f"{self.name}: pass the inputs by name ({', '.join(self.inputs)})")
            return dict(kwargs)
        return dict(self._signature.bind(*args, **kwargs).arguments)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        from ._program import current_program

        return typing.cast(R, current_program(self.name).call(self, self.bind(args, kwargs)))

    def __repr__(self) -> str:
        return f"<semantic function {self.name}({', '.join(self.inputs)}) -> {', '.join(self.output_names)}>"


@typing.overload
def semantic_function(fn: Callable[P, R], /) -> SemanticFunction[P, R]: ...


@typing.overload
def semantic_function(
    *,
    name: str | None = None,
    template: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    outputs: Mapping[str, Output] | None = None,
    tools: bool | list[str] = False,
    policy: Mapping[str, Any] | None = None,
) -> Callable[[Callable[P, R]], SemanticFunction[P, R]]: ...


def semantic_function(
    fn: Callable[P, R] | None = None,
    *,
    name: str | None = None,
    template: str | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    outputs: Mapping[str, Output] | None = None,
    tools: bool | list[str] = False,
    policy: Mapping[str, Any] | None = None,
) -> Any:
    """Defines a semantic function in code (the program request carries it).

    The docstring is the template unless ``template`` is given. ``max_tokens``
    and ``temperature`` apply to every output; ``outputs`` sets them per
    output. ``tools``: the app's tools this function may call (``True``: all).
    ``policy`` scripts each call's sessions, for the engine's generated test
    model. Usable bare (``@semantic_function``) or with arguments.
    """

    def wrap(f: Callable[P, R]) -> SemanticFunction[P, R]:
        text = template if template is not None else inspect.cleandoc(f.__doc__ or "")
        per_output = dict(outputs or {})
        sig = inspect.signature(f)
        hints = typing.get_type_hints(f)
        for o in template_variables(text)[1]:
            per_output.setdefault(o, Output(max_tokens, temperature))
        return SemanticFunction(
            name or f.__name__,
            text,
            sig,
            outputs=per_output,
            returns=hints.get("return", inspect.Signature.empty),
            tools=tuple(tools) if isinstance(tools, list) else tools,
            policy=policy,
        )

    return wrap(fn) if fn is not None else wrap


def app_function(name: str, inputs: Sequence[str], outputs: Sequence[str], *, policy: Mapping[str, Any] | None = None) -> SemanticFunction[..., Any]:
    """One of the AgentApp's own semantic functions (``spec.semanticFunctions``:
    named, reviewed templates), called by name with keyword inputs; it returns
    one variable, or a tuple for several outputs. ``Client.function(name)``
    reads the names from the router."""
    return SemanticFunction(name, None, None, outputs={}, returns=inspect.Signature.empty, tools=False, policy=policy, inputs=tuple(inputs), output_names=tuple(outputs))
