# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Where the NIXL of this Python environment is, and where its plugin manager looks.

NIXL's plugin manager searches one directory: NIXL_PLUGIN_DIR when set (it replaces the default,
so NIXL's own plugins are gone from such a process), else `plugins/` beside the libnixl.so it was
loaded from. In NIXL's wheels (built with meson-python) that is
`site-packages/.nixl_cu12.mesonpy.libs/plugins` (`.nixl_cu13...` for nixl-cu13), and a plugin is
found there by its file name, `libplugin_<NAME>.so`, NAME being the backend name callers ask for.
"""

import importlib.metadata
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path

# The distributions of NIXL's Python wheels, each with the name of its package.
DISTRIBUTIONS = (("nixl-cu12", "nixl_cu12"), ("nixl-cu13", "nixl_cu13"), ("nixl", "nixl"))

# A name only this plugin exports: how a file is recognised as ours without loading it.
OUR_SYMBOL = b"nd_plugin_version\0"


@dataclass
class Nixl:
    dist: str  # e.g. nixl-cu12
    package: str  # e.g. nixl_cu12
    version: str
    libs: Path  # the directory of its libnixl.so

    @property
    def default_plugin_dir(self) -> Path:
        return self.libs / "plugins"

    @property
    def plugin_dir(self) -> Path:
        """The directory this NIXL reads plugins from in a process of the current environment."""
        env = os.environ.get("NIXL_PLUGIN_DIR")
        return Path(env) if env else self.default_plugin_dir


def find_nixl() -> list[Nixl]:
    """The NIXL wheels installed in this environment that have their libnixl.so."""
    found = []
    for dist, package in DISTRIBUTIONS:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.origin:
            continue
        site = Path(spec.origin).resolve().parent.parent
        libs = site / f".{package}.mesonpy.libs"
        if (libs / "libnixl.so").is_file():
            found.append(Nixl(dist, package, version, libs))
    return found


def is_ours(path: Path) -> bool:
    """Whether the file is a build of this plugin (it exports nd_plugin_version), read without
    loading it."""
    try:
        return OUR_SYMBOL in path.read_bytes()
    except OSError:
        return False


def plugin_file(plugin_dir: Path, name: str) -> Path:
    return plugin_dir / f"libplugin_{name}.so"
