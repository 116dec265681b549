// Package e2e holds the end-to-end tests that drive real agent hosts (the
// Claude Code, Codex, Gemini, Copilot, Qwen Code, Droid, opencode, Kilo and Cline CLIs from npm,
// pinned in hosts.tsv) against scripted models of the protocols they speak
// (Anthropic Messages, OpenAI Responses and Chat Completions, Gemini), with agentledger's hooks
// installed by `engine install`. The test binary runs itself in a network
// namespace that has only loopback (TestMain). The hosts are installed by
// .ci/run; a test whose host is absent is skipped, and the run names the
// hosts it skipped, unless AGENTLEDGER_E2E_REQUIRED=1 says they must run.
package e2e
