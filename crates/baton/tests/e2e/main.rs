//! End-to-end tests with the real agent clients (Claude Code, Codex, Gemini CLI) against fake
//! model APIs on 127.0.0.1. `fake_api` serves scripted model replies; `clients` runs each client
//! headless in a temp project with a temp HOME. These tests prove the harness itself: that a
//! scripted shell call runs, that a rate limit ends a run quickly, that a hand-configured
//! SessionStart hook's context reaches the model, and what a tool call and a hook can see of the
//! session they belong to.

mod clients;
mod fake_api;
mod smoke;
