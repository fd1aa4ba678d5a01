# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""The `nixl-daos` command.

    nixl-daos doctor [--pool P] [--container C] [--param K=V ...] [--io]
    nixl-daos install [--as NAME] [--replace] [--nixl PACKAGE | --plugin-dir DIR]
    nixl-daos remove [--as NAME] [--nixl PACKAGE | --plugin-dir DIR]
    nixl-daos where

Exit status: 0 done (doctor: nothing failed), 1 a check or the step failed, 2 a usage error.
install and remove act on the plugin directory of every NIXL wheel in the environment (nixl-cu12
and nixl-cu13 may both be there) unless --nixl or --plugin-dir names one."""

import argparse
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from nixl_daos import PLUGIN, __version__, doctor, nixlenv

# What `install --replace` renames the plugin it replaces to (NIXL lists only libplugin_*.so),
# and what `remove` puts back.
BACKUP_SUFFIX = ".before-nixl-daos"


def usage(msg: str) -> None:
    print(f"nixl-daos: {msg}", file=sys.stderr)
    sys.exit(2)


def plugin_dirs(args) -> list[Path]:
    """--plugin-dir, else the plugin directory of every NIXL wheel here (or of --nixl's)."""
    if args.plugin_dir:
        return [Path(args.plugin_dir)]
    wanted = args.nixl.replace("-", "_") if args.nixl else None
    found = [n for n in nixlenv.find_nixl() if not wanted or n.package == wanted]
    if not found:
        print(
            "nixl-daos: no NIXL wheel (nixl-cu12, nixl-cu13, nixl) in this environment"
            + (f" named {args.nixl}" if args.nixl else "")
            + "; give --plugin-dir for a NIXL built from source (its lib/<arch>/plugins directory)",
            file=sys.stderr,
        )
        sys.exit(1)
    # Each directory once: NIXL_PLUGIN_DIR is every wheel's directory when set.
    dirs: dict[Path, Path] = {}
    for n in found:
        dirs.setdefault(n.plugin_dir.resolve(), n.plugin_dir)
    return list(dirs.values())


def checked_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        usage(f"--as {name!r}: a backend name is letters, digits and _ (e.g. OBJ, DAOS_OBJ)")
    return name


def is_this_package(path: Path) -> bool:
    """The package's own copy (NIXL_PLUGIN_DIR or --plugin-dir may point at it): never a target."""
    # The file's own place, not what a symlink there points at (such a link may go).
    return path.exists() and PLUGIN.exists() and path.parent.resolve() / path.name == PLUGIN.resolve()


def install_into(directory: Path, name: str, replace: bool) -> int:
    dest = nixlenv.plugin_file(directory, name)
    backup = dest.with_name(dest.name + BACKUP_SUFFIX)
    if is_this_package(dest):
        print(f"nixl-daos: {dest} is this package's own copy; nothing to do", file=sys.stderr)
        return 0
    directory.mkdir(parents=True, exist_ok=True)
    other = dest.exists() and not nixlenv.is_ours(dest)
    if other and not replace:
        print(
            f"nixl-daos: {dest} is another plugin (not nixl-daos) that NIXL serves as {name}; nothing changed.\n"
            f"  Install this one under another name (--as DAOS_OBJ), or replace that one with --replace "
            f"(it is kept as {backup.name}, and `nixl-daos remove --as {name}` puts it back).",
            file=sys.stderr,
        )
        return 1
    # The copy is complete and on disk before anything is renamed, and every rename is atomic:
    # NIXL never finds a half-written plugin, nor no plugin at all where one was.
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as out, open(PLUGIN, "rb") as src:
            shutil.copyfileobj(src, out)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o755)
        if other:
            # Kept aside by a second name first (a hard link), so dest never goes missing. A
            # backup left from before is older than the plugin NIXL has there now (NIXL was
            # reinstalled since): the newer one is what `remove` must put back.
            if backup.exists():
                print(f"replacing the older {backup.name} with the plugin there now")
            link = f"{tmp}.keep"
            os.link(dest, link)
            os.replace(link, backup)
            print(f"kept {dest.name} as {backup}")
        os.replace(tmp, dest)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    print(f"installed {dest}: NIXL serves nixl-daos as backend {name}")
    return 0


def install(args) -> int:
    name = checked_name(args.as_name)
    if not PLUGIN.is_file():
        print(f"nixl-daos: this package has no plugin at {PLUGIN} (a broken install?)", file=sys.stderr)
        return 1
    return max(install_into(d, name, args.replace) for d in plugin_dirs(args))


def remove_from(directory: Path, name: str) -> int:
    dest = nixlenv.plugin_file(directory, name)
    backup = dest.with_name(dest.name + BACKUP_SUFFIX)
    if is_this_package(dest):
        print(f"nixl-daos: {dest} is this package's own copy; not removed", file=sys.stderr)
        return 1
    if dest.exists() and not nixlenv.is_ours(dest):
        if backup.exists():
            # NIXL was reinstalled over our copy: its file is in place, the backup is stale.
            backup.unlink()
            print(f"{dest} is NIXL's again; removed the stale {backup.name}")
            return 0
        print(f"nixl-daos: {dest} is not nixl-daos; nothing removed", file=sys.stderr)
        return 1
    if backup.exists():
        os.replace(backup, dest)
        print(f"put back {dest} (the plugin --replace had replaced)")
    elif dest.exists():
        dest.unlink()
        print(f"removed {dest}")
    return 0


def remove(args) -> int:
    name = checked_name(args.as_name)
    return max(remove_from(d, name) for d in plugin_dirs(args))


def where(_args) -> int:
    """The package's plugin, and per NIXL wheel what it serves as DAOS, every other name it serves
    this plugin as, and what --replace keeps aside (`remove` those before `pip uninstall
    nixl-daos`, which knows only the DAOS copies the wheel installed)."""
    print(f"nixl-daos {__version__}: {PLUGIN}")
    for n in nixlenv.find_nixl():
        path = nixlenv.plugin_file(n.plugin_dir, "DAOS")
        state = "nixl-daos" if nixlenv.is_ours(path) else ("another plugin" if path.exists() else "absent")
        print(f"{n.dist} {n.version}: DAOS is {path} ({state})")
        for other in sorted(n.plugin_dir.glob("libplugin_*.so")):
            if other != path and nixlenv.is_ours(other):
                print(f"  also served as {other.name[len('libplugin_') : -len('.so')]}: {other}")
        for kept in sorted(n.plugin_dir.glob("libplugin_*.so" + BACKUP_SUFFIX)):
            print(f"  kept aside by --replace: {kept}")
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
        where_to = s.add_mutually_exclusive_group()
        where_to.add_argument("--plugin-dir", help="a NIXL plugin directory (default: every NIXL wheel's here)")
        where_to.add_argument("--nixl", metavar="PACKAGE", help="only this NIXL wheel's (nixl_cu12, nixl_cu13)")
        s.set_defaults(fn=fn)
        if name == "install":
            s.add_argument("--replace", action="store_true", help="replace another plugin of that name (kept aside)")
    sub.add_parser("where", help="where the plugin is and what NIXL finds").set_defaults(fn=where)
    d.set_defaults(fn=doctor.run)
    args = ap.parse_args(argv)
    if args.cmd == "doctor":
        bad = [p for p in args.param if "=" not in p]
        if bad:
            ap.error(f"--param {bad[0]!r}: give K=V")  # exits 2
    return args.fn(args)
