# Helpers that start poolkeeper's own binaries against the loopback plane.
# Load after helpers:   load helpers; load poolkeeper
#
# They live in e2e/lib/poolkeeper.sh, which scripts/demo shares: pk_certs,
# pk_install_poolkeeper, pk_uninstall_poolkeeper, pk_log_port,
# pk_start_webhook, pk_start_controller.

# shellcheck source-path=SCRIPTDIR source=../lib/poolkeeper.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/poolkeeper.sh"
