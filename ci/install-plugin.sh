#!/usr/bin/env bash
# SPDX-FileCopyrightText: Copyright (c) 2026 nixl-daos contributors
# SPDX-License-Identifier: Apache-2.0
# Installs the plugin where a pip-installed NIXL looks for its plugins, beside NIXL's own:
#
#   bash ci/install-plugin.sh [PYTHON]     (default: python3)
#
# NIXL's plugin manager lists the directory `plugins/` beside its libnixl.so
# (site-packages/.nixl_cu12.mesonpy.libs/plugins for the nixl-cu12 wheel, .nixl_cu13... for
# nixl-cu13); NIXL_PLUGIN_DIR would replace that directory, and UCX and POSIX would disappear
# from the process. This copies target/release/libplugin_DAOS.so there (debug info stripped;
# built first if missing), then checks in a fresh process, with NIXL_PLUGIN_DIR unset, that NIXL
# lists DAOS beside UCX and POSIX. It writes into NIXL's installed files (there is no other
# directory NIXL 1.5 searches by default): reinstalling NIXL removes the plugin, and running this
# again puts it back. NIXL built from source: `meson install` of this repository's meson.build
# (README, Install) puts it in that NIXL's plugin directory instead.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$ROOT/ci/lib.sh"
PY=${1:-python3}
SO=$ROOT/target/release/libplugin_DAOS.so
if [ ! -f "$SO" ]; then
	say "building the plugin (cargo build --release)"
	(cd "$ROOT" && cargo build --release -p nixl-daos)
fi
dir=$("$PY" - <<'EOF'
import importlib, pathlib, sys
for name in ("nixl_cu12", "nixl_cu13", "nixl"):
    try:
        mod = importlib.import_module(name)
    except ImportError:
        continue
    site = pathlib.Path(mod.__file__).resolve().parent.parent
    for libs in (site / f".{name}.mesonpy.libs", site / ".nixl.mesonpy.libs"):
        if (libs / "libnixl.so").is_file():
            print(libs / "plugins")
            sys.exit(0)
sys.exit("no pip-installed NIXL (nixl-cu12, nixl-cu13 or nixl) with its libnixl.so found for this python")
EOF
) || die "$PY: no NIXL wheel found (pip install nixl-cu12==1.5.1, or pass the python of the NIXL environment)"
mkdir -p "$dir"
objcopy --strip-debug "$SO" "$dir/libplugin_DAOS.so.tmp"
mv -f "$dir/libplugin_DAOS.so.tmp" "$dir/libplugin_DAOS.so"
say "installed $dir/libplugin_DAOS.so"
env -u NIXL_PLUGIN_DIR "$PY" - <<'EOF' || die "NIXL does not list DAOS beside UCX and POSIX after the install"
import importlib
for name in ("nixl_cu12", "nixl_cu13", "nixl"):
    try:
        api = importlib.import_module(f"{name}._api")
        break
    except ImportError:
        continue
plugins = set(api.nixl_agent("install-check", api.nixl_agent_config(backends=[])).get_plugin_list())
missing = {"DAOS", "UCX", "POSIX"} - plugins
print("NIXL lists:", ", ".join(sorted(plugins)))
raise SystemExit(f"missing: {sorted(missing)}" if missing else 0)
EOF
