#!/usr/bin/env bash
# The KV-offload benchmark through NIXL on the embedded daos-sim (for now the quick run,
# bench/quick.py). Same set-up as ci/test.sh; extra arguments go to bench/quick.py.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

say "bench/quick.py $*"
"$VPY" bench/quick.py "$@"
