#!/bin/sh
# A Baton hook for healthchecks.io-style dead-man monitors (healthchecks.io, Cronitor, Uptime
# Kuma's push monitors): on a success it pings CHECK_URL, on a failure CHECK_URL/fail, with the
# run's last output as the body so the monitor shows why. Wire it as both hooks:
#   on: { success: "ping-backup-check", failure: "ping-backup-check" }
# and the monitor alerts when backup fails, and when it has not succeeded for its period.
#
#   CHECK_URL   the check's ping URL, such as https://hc-ping.com/<uuid>
set -eu
: "${CHECK_URL:?set CHECK_URL in the action env}"
url=$CHECK_URL
[ "${BATON_HOOK_PHASE:-success}" = success ] || url="$CHECK_URL/fail"
exec curl -fsS --max-time 10 --retry 5 --data-binary "@${BATON_HOOK_OUTPUT:-/dev/null}" "$url"
