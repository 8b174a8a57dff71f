"""``FIELD=VALUE`` words of the command line (``search --grid``, ``pretrain --set``) parsed as
typed values of :class:`~topo_contrastive.training.ExperimentConfig` fields.

Imports neither torch nor numpy at import time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: ``--grid`` words for booleans (case-insensitive) and for ``None`` (optional fields).
_TRUE_WORDS = ("true", "1")
_FALSE_WORDS = ("false", "0")
_NONE_WORDS = ("none", "null")
#: The pseudo-field ``K`` of ``--grid``: sets ``K_down`` and ``K_up`` together.
_GRID_K = "K"
#: Fields of :class:`ExperimentConfig` that say which row of Table 1 a configuration is, not
#: how it is tuned: ``--grid`` and ``--set`` refuse them (a run named ``SCL`` must be SCL).
IDENTITY_FIELDS = ("name", "method", "loss", "mask", "notes")


def _split_top_level(text: str, sep: str = ",") -> list[str]:
    """``text`` split at the ``sep`` characters outside brackets (``(0,1,1),(1,1,1)``)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced brackets in {text!r}")
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise ValueError(f"unbalanced brackets in {text!r}")
    parts.append(text[start:])
    return parts


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _coerce(text: str, tp: Any) -> Any:
    """``text`` parsed as a value of the type hint ``tp`` (raises ``ValueError``)."""
    import types
    import typing

    raw = text
    text = _unquote(text)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):  # str | None
        if text.lower() in _NONE_WORDS:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _coerce(raw, inner)
    if origin is tuple:
        if (text[:1], text[-1:]) in (("(", ")"), ("[", "]")):
            inner = text[1:-1]
            items = _split_top_level(inner) if inner.strip() else []
            if len(items) > 1 and not items[-1].strip():
                items.pop()  # a trailing comma, as in (gradient,)
        elif len(args) == 2 and args[1] is Ellipsis and text:
            items = [text]  # a bare value is a 1-tuple: perturb=gradient
        else:
            raise ValueError(f"expected a tuple in brackets like (0,1,1), got {raw!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            elem_types = [args[0]] * len(items)
        elif len(items) != len(args):
            raise ValueError(f"expected a tuple of {len(args)} values, got {raw!r}")
        else:
            elem_types = list(args)
        try:
            return tuple(_coerce(i, t) for i, t in zip(items, elem_types, strict=True))
        except ValueError as err:
            raise ValueError(f"{err} (in {raw!r})") from None
    if not text:
        raise ValueError(f"expected a value, got {raw!r}")
    if tp is bool:
        if text.lower() in _TRUE_WORDS:
            return True
        if text.lower() in _FALSE_WORDS:
            return False
        raise ValueError(f"expected a bool (true/false or 1/0), got {raw!r}")
    if tp is int:
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"expected an integer, got {raw!r}") from None
    if tp is float:
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"expected a real number, got {raw!r}") from None
    if tp is str:
        return text
    raise TypeError(f"cannot parse values of type {tp!r}")  # a new field type: extend _coerce


def settable_fields() -> list[str]:
    """The fields ``--grid`` and ``--set`` accept: the hyper-parameters of
    :class:`ExperimentConfig` (not :data:`IDENTITY_FIELDS`) and ``K``, sorted."""
    import dataclasses

    from topo_contrastive.training.configs import ExperimentConfig

    names = [f.name for f in dataclasses.fields(ExperimentConfig)]
    return sorted([n for n in names if n not in IDENTITY_FIELDS] + [_GRID_K])


def parse_grid(items: Sequence[str], option: str = "--grid") -> dict[str, list[Any]]:
    """The ``--grid FIELD=V1,V2 ...`` entries as ``{field: [values]}``, typed per field.

    Every value is parsed as the type of the :class:`ExperimentConfig` field it sets
    (``K`` is an integer that sets ``K_down`` and ``K_up``): booleans as ``true``/``false``
    (any case) or ``1``/``0``; integers; real numbers; strings (quotes optional); ``none``
    or ``null`` for an optional field; tuples in brackets, ``gamma=(0,1,1)`` or
    ``perturb=(gradient,curl)`` (a bare string is a 1-tuple: ``perturb=gradient``). Values
    are separated by commas outside brackets (``gamma=(1,1,1),(0,1,1)``), or all by ``;``
    when one is present (``gamma=[1,1,1];[0,0,1]``).

    Args:
        items: the ``FIELD=VALUES`` words.
        option: how the messages name the option (``"--grid"`` or ``"--set"``).

    Raises:
        ValueError: an entry without ``=``, an unknown or repeated field, a field that says
            which row the run is (:data:`IDENTITY_FIELDS`: ``name``, ``method``, ``loss``,
            ``mask``, ``notes``), ``K`` together with ``K_down`` / ``K_up``, or a value that
            does not parse as its field's type (the message names the field and the value;
            an unknown or refused field lists the allowed ones).
    """
    import dataclasses
    import typing

    from topo_contrastive.training.configs import ExperimentConfig

    hints = typing.get_type_hints(ExperimentConfig)
    types_ = {f.name: hints[f.name] for f in dataclasses.fields(ExperimentConfig)}
    types_[_GRID_K] = int
    grid: dict[str, list[Any]] = {}
    allowed = ", ".join(settable_fields())
    form = "FIELD=V1,V2" if option == "--grid" else "FIELD=VALUE"
    for item in items:
        if "=" not in item:
            raise ValueError(f"{option} entries look like {form}; got {item!r}")
        key, values = (s.strip() for s in item.split("=", 1))
        if key in IDENTITY_FIELDS:
            raise ValueError(
                f"{option} {item}: {key!r} is not a hyper-parameter but says which row of "
                f"Table 1 the run is (choose the row with --config); {option} can change: "
                f"{allowed}"
            )
        if key not in types_:
            raise ValueError(
                f"unknown configuration field {key!r} in {option}; choose among {allowed}"
            )
        if key in grid:
            raise ValueError(f"{option} field {key!r} is given twice")
        try:
            texts = values.split(";") if ";" in values else _split_top_level(values)
            grid[key] = [_coerce(text, types_[key]) for text in texts]
        except ValueError as err:
            raise ValueError(f"{option} {key}={values}: field {key!r}: {err}") from None
    if _GRID_K in grid and {"K_down", "K_up"} & set(grid):
        raise ValueError(
            f"{option} K sets both K_down and K_up; do not also give K_down or K_up"
        )
    return grid


def set_fields(config: Any, items: Sequence[str]) -> Any:
    """``config`` with the ``--set FIELD=VALUE`` changes (one value per field).

    Raises:
        ValueError: a field given more than one value, or an entry :func:`parse_grid` or
            :func:`~experiments.search.grid_point_config` refuses.
        TypeError: a value of the wrong type for its field.
    """
    from topo_contrastive.training.configs import grid_point_config

    point = {}
    for key, values in parse_grid(items, option="--set").items():
        if len(values) != 1:
            raise ValueError(
                f"--set {key} takes one value, got {len(values)} (write tuples in brackets: "
                "'perturb=(gradient,curl)')"
            )
        point[key] = values[0]
    return grid_point_config(config, point) if point else config
