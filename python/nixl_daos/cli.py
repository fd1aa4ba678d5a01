# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The `nixl-daos` command.

    nixl-daos doctor [--pool P] [--container C] [--param K=V ...] [--io]
    nixl-daos install [--as NAME] [--replace] [--plugin-dir DIR]
    nixl-daos remove [--as NAME] [--plugin-dir DIR]
    nixl-daos where

Exit status: 0 done (doctor: nothing failed), 1 a check or the step failed, 2 a usage error."""

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

from nixl_daos import PLUGIN, __version__, doctor, nixlenv

# What `install --replace` renames the plugin it replaces to (NIXL lists only libplugin_*.so),
# and what `remove` puts back.
BACKUP_SUFFIX = ".before-nixl-daos"


def plugin_dir(args) -> Path:
    if args.plugin_dir:
        return Path(args.plugin_dir)
    found = nixlenv.find_nixl()
    if not found:
        raise SystemExit(
            "nixl-daos: no NIXL wheel (nixl-cu12, nixl-cu13, nixl) in this environment; give --plugin-dir for a NIXL "
            "built from source (its lib/<arch>/plugins directory)"
        )
    return found[0].plugin_dir


def checked_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise SystemExit(f"nixl-daos: --as {name!r}: a backend name is letters, digits and _ (e.g. OBJ, DAOS_OBJ)")
    return name


def install(args) -> int:
    name = checked_name(args.as_name)
    directory = plugin_dir(args)
    if not PLUGIN.is_file():
        print(f"nixl-daos: this package has no plugin at {PLUGIN} (a broken install?)", file=sys.stderr)
        return 1
    directory.mkdir(parents=True, exist_ok=True)
    dest = nixlenv.plugin_file(directory, name)
    backup = dest.with_name(dest.name + BACKUP_SUFFIX)
    if dest.exists() and not nixlenv.is_ours(dest):
        if not args.replace:
            print(
                f"nixl-daos: {dest} is another plugin (not nixl-daos) that NIXL serves as {name}; nothing changed.\n"
                f"  Install this one under another name (--as DAOS_OBJ), or replace that one with --replace "
                f"(it is kept as {backup.name}, and `nixl-daos remove --as {name}` puts it back).",
                file=sys.stderr,
            )
            return 1
        if backup.exists():
            print(f"nixl-daos: {backup} exists already; move it away first", file=sys.stderr)
            return 1
        os.rename(dest, backup)
        print(f"kept {dest.name} as {backup}")
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.copyfile(PLUGIN, tmp)
    os.chmod(tmp, 0o755)
    os.replace(tmp, dest)
    print(f"installed {dest}: NIXL serves nixl-daos as backend {name}")
    return 0


def remove(args) -> int:
    name = checked_name(args.as_name)
    directory = plugin_dir(args)
    dest = nixlenv.plugin_file(directory, name)
    backup = dest.with_name(dest.name + BACKUP_SUFFIX)
    if dest.exists() and not nixlenv.is_ours(dest):
        print(f"nixl-daos: {dest} is not nixl-daos; nothing removed", file=sys.stderr)
        return 1
    if dest.exists():
        dest.unlink()
        print(f"removed {dest}")
    if backup.exists():
        os.rename(backup, dest)
        print(f"put back {dest} (the plugin --replace had replaced)")
    return 0


def where(_args) -> int:
    print(f"nixl-daos {__version__}: {PLUGIN}")
    for n in nixlenv.find_nixl():
        path = nixlenv.plugin_file(n.plugin_dir, "DAOS")
        state = "nixl-daos" if nixlenv.is_ours(path) else ("another plugin" if path.exists() else "absent")
        print(f"{n.dist} {n.version}: {path} ({state})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="nixl-daos", description="The DAOS storage backend for NIXL.")
    ap.add_argument("--version", action="version", version=f"nixl-daos {__version__}")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("doctor", help="check this deployment and say what to fix")
    d.add_argument("--pool", help="the pool to check (default: $DAOS_POOL)")
    d.add_argument("--container", help="the container to check (default: $DAOS_CONT)")
    d.add_argument("--param", action="append", default=[], metavar="K=V", help="a backend parameter, as NIXL passes it")
    d.add_argument("--io", action="store_true", help="also write, read and queryMem a test key, then remove it")
    d.add_argument("--nixl", metavar="PACKAGE", help="the NIXL package to check (nixl_cu12, nixl_cu13) when several")
    for name, fn, text in (
        ("install", install, "put the plugin in NIXL's plugin directory under a backend name"),
        ("remove", remove, "take it out again (and put back what --replace replaced)"),
    ):
        s = sub.add_parser(name, help=text)
        s.add_argument("--as", dest="as_name", default="DAOS", metavar="NAME", help="backend name (default DAOS)")
        s.add_argument("--plugin-dir", help="a NIXL plugin directory (default: this environment's NIXL's)")
        s.set_defaults(fn=fn)
        if name == "install":
            s.add_argument("--replace", action="store_true", help="replace another plugin of that name (kept aside)")
    sub.add_parser("where", help="where the plugin is and what NIXL finds").set_defaults(fn=where)
    d.set_defaults(fn=doctor.run)
    args = ap.parse_args(argv)
    if args.cmd == "doctor":
        bad = [p for p in args.param if "=" not in p]
        if bad:
            ap.error(f"--param {bad[0]!r}: give K=V")
    return args.fn(args)
