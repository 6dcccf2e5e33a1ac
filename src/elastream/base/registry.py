"""Name -> implementation registries shared by the CLI, the engines and the services."""

from __future__ import annotations

from collections.abc import Iterator
from importlib.metadata import EntryPoint, entry_points
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """A name that no implementation is registered under; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class PluginError(RuntimeError):
    """An installed plugin that cannot be loaded or registered; the message names its entry point
    and the distribution that declares it."""


class Registry(Generic[T]):
    """A small, typed name -> implementation map with helpful errors. With `group`, every
    installed distribution's entry points in that group are registered too, the first time the
    registry is asked (a plugin: `[project.entry-points."elastream.policies"] name =
    "module:attr"`, the attribute being the implementation, registered under the entry point's
    name; docs/policies.md, "Adding a policy")."""

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._items: dict[str, T] = {}
        self._discovered = group is None

    def register(self, name: str, item: T) -> T:
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = item
        return item

    def get(self, name: str) -> T:
        items = self._all()
        try:
            return items[name]
        except KeyError:
            known = ", ".join(sorted(items)) or "none"
            raise UnknownNameError(f"unknown {self.kind} {name!r} (known: {known})") from None

    def names(self) -> list[str]:
        return sorted(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def _all(self) -> dict[str, T]:
        if not self._discovered:
            self._discovered = True
            for point in entry_points(group=self.group or ""):
                self._register_plugin(point)
        return self._items

    def _register_plugin(self, point: EntryPoint) -> None:
        where = f"{self.kind} plugin {point.name!r} ({point.value}"
        where += f", from {point.dist.name})" if point.dist is not None else ")"
        try:
            item = point.load()
        except Exception as exc:  # any error of the plugin's own import: said, with its source
            raise PluginError(f"{where} cannot be loaded: {type(exc).__name__}: {exc}") from exc
        named = getattr(item, "name", point.name)
        if named != point.name:
            raise PluginError(f"{where} is named {named!r}: an entry point's name must be its own")
        if point.name in self._items and self._items[point.name] is not item:
            raise PluginError(f"{where}: a {self.kind} {point.name!r} is already registered")
        self._items[point.name] = item
