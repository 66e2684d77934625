"""Every path built from a key or a file name stays under its root, or is refused."""

from __future__ import annotations

from pathlib import Path


class UnsafePathError(ValueError):
    """A path that would lead outside the folder it must stay in."""


def inside(root: Path, *parts: str) -> Path:
    """`root/parts...`, refused when it resolves (links and `..` followed) outside `root`."""
    base = root.resolve()
    path = base.joinpath(*parts).resolve()
    if path == base or not path.is_relative_to(base):
        raise UnsafePathError(f"{'/'.join(parts)!r} leads outside {base}; refused")
    return path
