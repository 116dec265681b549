// Package e2e holds the end-to-end tests that drive real agent hosts (the
// Claude Code CLI from npm) against a scripted model, with agentledger's
// hooks installed by `engine install`. The hosts are installed by .ci/run;
// a test whose host is absent is skipped, unless AGENTLEDGER_E2E_REQUIRED=1
// says it must run.
package e2e
