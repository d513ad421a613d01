//! The ground every `rounds` crate stands on: the conversation a run holds, how a run ends
//! (`outcome`), what it records (`transcript`, whose JSON Schema `schema` generates), the table
//! of built-in providers (`providers`), and the few rules every layer shares (the environment,
//! the HTTP client's setup, writing rounds' own files, redaction, text for a terminal or for
//! Markdown, prices, did-you-mean). It names no other `rounds` crate.
#![forbid(unsafe_code)]
#![deny(clippy::print_stdout)]

pub mod attachment;
pub mod conversation;
pub mod env;
pub mod files;
pub mod markdown;
pub mod net;
pub mod outcome;
pub mod pricing;
pub mod providers;
pub mod redact;
pub mod schema;
pub mod suggest;
pub mod terminal;
pub mod transcript;
