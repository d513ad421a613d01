//! One integration test binary (as ripgrep and codex do): end-to-end tests of the real `rounds`
//! binary against a scripted provider on 127.0.0.1.

// Helpers outside #[test] functions panic on failure by design: that is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod suite;
