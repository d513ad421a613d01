//! A batch as a queue in the PostgreSQL store.

use std::time::Instant;

use super::args::{Parsed, ResultsArgs, StatusArgs};
use super::display;
use super::job::Setup;
use super::jobs::{BadLine, Job};

pub async fn enqueue(_parsed: &Parsed, _jobs: &[Job], _bad: &[BadLine]) -> u8 {
    display::error("error", "not yet");
    1
}

pub async fn work(_setup: Setup, _started: Instant) -> u8 {
    display::error("error", "not yet");
    1
}

pub async fn status(_args: &StatusArgs) -> u8 {
    1
}

pub async fn results(_args: &ResultsArgs) -> u8 {
    1
}
