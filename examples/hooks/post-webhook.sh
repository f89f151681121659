#!/bin/sh
# A Baton hook (`on: { failure: "notify-chat" }`): posts what happened to a chat webhook URL
# (Slack, Mattermost, Discord's /slack endpoint, or anything that takes {"text": "..."}), with
# the last lines of the run's output. Needs curl and jq.
#
#   WEBHOOK_URL   where to post (the action's env, or a file of the action's cwd)
#   TAIL_LINES    how many lines of the output to include (default 20)
set -eu
: "${WEBHOOK_URL:?set WEBHOOK_URL in the action env}"
lines=${TAIL_LINES:-20}
tail=$(tail -n "$lines" "${BATON_HOOK_OUTPUT:-/dev/null}" 2>/dev/null || true)
summary="${BATON_HOOK_ACTION} run ${BATON_HOOK_RUN_ID} (${BATON_HOOK_KEY}): ${BATON_HOOK_PHASE}"
[ -n "${BATON_HOOK_EXIT_CODE:-}" ] && summary="$summary, exit ${BATON_HOOK_EXIT_CODE}"
[ -n "${BATON_HOOK_ERROR:-}" ] && summary="$summary: ${BATON_HOOK_ERROR}"
body=$(jq -n --arg summary "$summary" --arg tail "$tail" --arg event "${BATON_HOOK_EVENT:-}" \
  --arg run "$BATON_HOOK_RUN_ID" --arg action "$BATON_HOOK_ACTION" --arg phase "$BATON_HOOK_PHASE" \
  '{text: ($summary + (if $tail == "" then "" else "\n```\n" + $tail + "\n```" end)),
    baton: {event: $event, run: ($run | tonumber), action: $action, phase: $phase}}')
exec curl -fsS --max-time 10 --retry 3 -H 'Content-Type: application/json' --data-binary "$body" "$WEBHOOK_URL"
