//! End-to-end tests with the real agent clients (Claude Code, Codex, Gemini CLI, Copilot CLI,
//! OpenCode) against fake model APIs on 127.0.0.1. `fake_api` serves scripted model replies; `clients` runs each client
//! headless in a temp project with a temp HOME. `smoke` proves the harness itself: that a
//! scripted shell call runs, that a rate limit ends a run quickly, that a hand-configured
//! SessionStart hook's context reaches the model, and what a tool call and a hook can see of the
//! session they belong to. `flow` proves baton with each client: installed by `baton init`, a
//! ticket loop driven through two phases, interrupted by a 429 and resumed with the packet.
//! `supervise` proves `baton supervise` with each client: 429s waited out and the session
//! relaunched until the loop finishes, and a crash that is not retried. `signals` proves that a
//! plan's limit, sent as each provider sends it, leaves the loop with the reset the client
//! states. `copilot` proves baton with Copilot CLI: a 429 that outlasts its retries interrupts
//! the loop as a rate limit, and the next run gets the packet; `opencode` proves the same of
//! OpenCode through baton's plugin, and `opencode_v2` of OpenCode 2 through the same plugin.
//! `judge` proves the judge of "done" with Claude Code (its Stop hook, and `/goal`) and Codex.
//!
//! The clients come from `$BATON_E2E_CLIENTS/node_modules/.bin/` (for instance a folder where
//! `npm install` put the pinned versions listed in `clients::PINNED`, and on linux-x64
//! `clients::OPENCODE_V2`), else they are installed into `target/e2e-clients` on first use.
//! With `BATON_E2E_DUMP=<dir>` the fake API also writes every request it receives to a file in
//! `<dir>`, for debugging.

mod clients;
mod copilot;
mod fake_api;
mod flow;
mod guard;
mod judge;
mod monorepo;
mod network;
mod opencode;
mod opencode_v2;
mod plugin;
mod signals;
mod smoke;
mod supervise;
