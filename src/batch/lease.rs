//! A worker's hold on a job while it runs: the lease it renews, and the job's records written
//! under it. A lease another worker took stops the job at once; a store that stays away past
//! `--store-timeout` leaves the job to the queue.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::display;
use crate::agent::Cancel;
use crate::outcome::Status;
use crate::records::StoreSource;
use crate::store::Store;
use crate::store::pool::StorePool;
use crate::store::queue::{Fence, Queue};
use crate::store::{PgStore, StoreError};

/// Renews the lease every third of it while the job runs. A lease another worker took is
/// lost: this worker stops the job at once. While the store is away the job goes on and
/// the renewal waits (up to `--store-timeout`); past that the job is stopped and left to
/// the queue.
pub(super) fn heartbeat(
    queue: Arc<Queue>,
    fence: &Fence,
    length: Duration,
    cancel: Cancel,
    lease: Lease,
) -> tokio::task::JoinHandle<()> {
    let fence = fence.clone();
    tokio::spawn(async move {
        let job_id = &fence.job_id;
        let mut renewed = Instant::now();
        let (status, why) = loop {
            tokio::time::sleep(length / 3).await;
            match queue.renew(&fence, length).await {
                Ok(true) => renewed = Instant::now(),
                Ok(false) => {
                    let why = format!(
                        "this worker lost its lease on job {job_id:?}: another worker took \
                         it over, so this one stops it"
                    );
                    display::warning(&why);
                    lease.lost.store(true, Ordering::Relaxed);
                    break (Status::Error, why);
                }
                Err(e @ StoreError::Unavailable { .. }) => {
                    lease.gave_up.store(true, Ordering::Relaxed);
                    break (
                        Status::Unavailable,
                        format!("{e}: job {job_id:?} is left to the queue"),
                    );
                }
                Err(e) if renewed.elapsed() >= length => {
                    let why = format!("job {job_id:?}: cannot renew its lease: {e}");
                    display::warning(&why);
                    lease.lost.store(true, Ordering::Relaxed);
                    break (Status::Error, why);
                }
                Err(_) => {}
            }
        };
        cancel.cancel(status, why);
    })
}

/// What a job's heartbeat and records found about its lease.
#[derive(Clone, Default)]
pub(super) struct Lease {
    /// Another worker took the job over (or the lease could not be renewed in time).
    pub(super) lost: Arc<AtomicBool>,
    /// The store stayed away past `--store-timeout`: the job is left to the queue.
    pub(super) gave_up: Arc<AtomicBool>,
}

/// A job's records: written through the worker's pool, under the job's lease.
pub(super) struct JobStore {
    pub(super) pool: Arc<StorePool>,
    pub(super) fence: Fence,
    pub(super) gave_up: Arc<AtomicBool>,
}

impl StoreSource for JobStore {
    fn open(&self) -> Box<dyn Store> {
        Box::new(PgStore::pooled(
            self.pool.clone(),
            self.fence.clone(),
            self.gave_up.clone(),
        ))
    }
}
