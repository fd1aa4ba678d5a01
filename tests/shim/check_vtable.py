#!/usr/bin/env python3
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
"""Hold our engine's vtable against the wheel's POSIX engine, slot by slot.

    python3 tests/shim/check_vtable.py [path/to/libplugin_DAOS.so]   (default target/release/)

Passes when both vtables have 27 slots (0-26, after offset-to-top and typeinfo) and every slot of
ours points at a function with the method name POSIX has in that slot (argument types differ by
design: ours are our own declarations). By eye, the same with the shared tool:
    /work/shared/tools/vtable-slots.py <venv>/.../plugins/libplugin_POSIX.so _ZTV15nixlPosixEngine
    /work/shared/tools/vtable-slots.py target/release/libplugin_DAOS.so \
        _ZTVN9nixl_daos4shim12_GLOBAL__N_110DaosEngineE
(that tool, as of this writing, drops the target of R_X86_64_RELATIVE entries, which all of ours
are, and prints one of several names where the compiler folded identical functions such as
supportsRemote/supportsNotif; hence this script.) Needs binutils (nm, readelf, c++filt).
"""

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUR_VTABLE = re.compile(r"^_ZTVN9nixl_daos4shim.*DaosEngineE$")


def sh(*cmd, stdin=None):
    return subprocess.run(cmd, capture_output=True, text=True, input=stdin, check=True).stdout


def slots(lib, want):
    """[(slot, {method names})] of the vtable whose symbol matches want (a str or a regex)."""
    names_at, vtable = {}, None
    for line in sh("nm", "-S", lib).splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        addr, size, _, name = int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]
        names_at.setdefault(addr, []).append(name)
        if (name == want) if isinstance(want, str) else want.match(name):
            vtable = (addr, size)
    if vtable is None:
        sys.exit(f"no vtable {want} in {lib} (stripped?)")
    relocs = {}
    for line in sh("readelf", "-rW", lib).splitlines():
        f = line.split()
        if len(f) >= 4 and re.fullmatch(r"[0-9a-f]{8,16}", f[0]) and f[2].startswith("R_X86_64"):
            if f[2] == "R_X86_64_RELATIVE":
                relocs[int(f[0], 16)] = ("addr", int(f[3], 16))
            elif len(f) >= 5:
                relocs[int(f[0], 16)] = ("sym", f[4].split("@")[0])
    start, size = vtable
    out = []
    for i in range(2, size // 8):
        kind, what = relocs.get(start + 8 * i, (None, None))
        mangled = names_at.get(what, []) if kind == "addr" else [what] if kind == "sym" else []
        methods = set()
        for m in mangled:
            demangled = sh("c++filt", stdin=m).strip()
            hit = re.match(r"^(?:.*::)?(~?\w+)\(", re.sub(r"\(anonymous namespace\)", "anon", demangled))
            if hit:
                methods.add("~" if hit.group(1).startswith("~") else hit.group(1))
        out.append((i - 2, methods))
    return out


def main():
    ours = sys.argv[1] if len(sys.argv) > 1 else str(ROOT / "target/release/libplugin_DAOS.so")
    posix = next(ROOT.joinpath(".venv").rglob("libplugin_POSIX.so"), None)
    if posix is None:
        sys.exit("no libplugin_POSIX.so under .venv")
    theirs, mine = slots(str(posix), "_ZTV15nixlPosixEngine"), slots(ours, OUR_VTABLE)
    bad = len(theirs) != 27 or len(mine) != 27
    for (slot, want), (_, have) in zip(theirs, mine):
        ok = len(want) == 1 and want <= have
        bad |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {slot:2d} POSIX {'/'.join(sorted(want)):<20} ours {'/'.join(sorted(have))}")
    print(f"{len(theirs)} POSIX slots, {len(mine)} ours: {'MISMATCH' if bad else 'match'}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
