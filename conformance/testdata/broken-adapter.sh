#!/bin/sh
# A deliberately broken AARTS adapter, for the conformance suite's own
# tests: it ignores the host's input, maps every event to a PreToolUse of
# an unknown tool with no artifacts, accepts whatever it is given, and
# never answers the host (so no deny is ever enforced).
cat >/dev/null
printf '%s\n' '{"event":{"session_id":"broken","timestamp":"2026-11-23T10:00:00Z","host_id":"broken-adapter","aarts_version":"0.1","hook_point":"PreToolUse","turn_id":"t","tool_name":"other","tool_name_native":"unknown","tool_input":{},"artifacts":[]},"answer":{}}'
