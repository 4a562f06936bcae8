# Helpers that start poolkeeper's own binaries against the loopback plane.
# Load after helpers:   load helpers; load poolkeeper
#
# They live in e2e/lib/poolkeeper.sh, which scripts/demo shares:
# pk_serving_cert (replaces the one in helpers.bash: it reuses the CA in the
# folder, so a second call rotates the serving pair), pk_log_port,
# pk_start_webhook, pk_start_controller, pk_register_poolkeeper_webhooks,
# pk_unregister_poolkeeper_webhooks.

# shellcheck source-path=SCRIPTDIR source=../lib/poolkeeper.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/poolkeeper.sh"
