//! A worker's connections to the store: one bounded pool (deadpool-postgres, over the same
//! tokio-postgres and TLS as a single run's connection) shared by its claim loop, its leases and
//! every job's records, and the patience to wait out an outage of the server.
//!
//! Every job opening its own connection passed the server's `max_connections` with a few
//! workers, and a refused connection ended the job for good. With the pool a worker holds at
//! most `--jobs` + 2 sessions, and a connection the server refuses for now ("too many
//! clients", a restart, a network drop) is waited for with backoff, up to `--store-timeout`.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use deadpool_postgres::{
    Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod, Runtime,
};
use tokio_postgres::NoTls;

use super::postgres::{describe_database, migrate, prepare};
use super::tls::{self, Protection};
use super::{ConnectError, StoreError};

/// Told once per outage, when the first operation finds the store unavailable: the error and
/// how long the pool will wait for it.
pub type Notice = Arc<dyn Fn(&StoreError, Duration) + Send + Sync>;

/// Connections idle this long are closed, so that a worker with little to do leaves sessions
/// to the other workers of a server near its `max_connections`.
const IDLE: Duration = Duration::from_secs(5);

/// The longest pause between two tries while the store is away.
const MAX_PAUSE: Duration = Duration::from_secs(2);

pub struct StorePool {
    pool: Pool,
    /// The database as messages name it, without credentials.
    pub(crate) database: String,
    /// How long a store operation waits for an unavailable store before it gives up.
    patience: Duration,
    notice: Option<Notice>,
    /// A wait has been said and the store not seen back since: one notice per outage.
    waiting: AtomicBool,
}

impl StorePool {
    /// A pool of at most `size` connections to `url`, with the schema brought up to date once
    /// (on its first connection). With `patience` zero nothing is waited for: a refused
    /// connection is the error it was (a command's usage error), as for a single run.
    pub(crate) async fn open(
        url: &str,
        size: usize,
        patience: Duration,
        notice: Option<Notice>,
    ) -> Result<StorePool, StoreError> {
        let (config, tls) = prepare(url)?;
        let database = describe_database(&config);
        let manager_config = ManagerConfig {
            // A connection the server closed is dropped when it comes back to the pool; one
            // that died idle fails its next statement, which is retried on a new one.
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = if tls.protection == Protection::Plain {
            Manager::from_config(config, NoTls, manager_config)
        } else {
            let connector = tls::connector(&tls).map_err(|e| StoreError::Connect {
                database: database.clone(),
                cause: ConnectError::Tls(Box::new(e)),
            })?;
            Manager::from_config(config, connector, manager_config)
        };
        let pool = Pool::builder(manager)
            .max_size(size.max(1))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| StoreError::Pool {
                database: database.clone(),
                problem: e.to_string(),
            })?;
        let pool = StorePool {
            pool,
            database,
            patience,
            notice,
            waiting: AtomicBool::new(false),
        };
        pool.retry(|| async {
            let mut client = pool.get().await?;
            migrate(&mut client)
                .await
                .map_err(|cause| StoreError::Migrate {
                    database: pool.database.clone(),
                    cause,
                })
        })
        .await?;
        if !patience.is_zero() {
            pool.reap_idle();
        }
        Ok(pool)
    }

    /// A connection, new or idle in the pool; waits while all `size` are in use.
    pub(crate) async fn get(&self) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| match e {
            PoolError::Backend(e) => StoreError::Connect {
                database: self.database.clone(),
                cause: ConnectError::Postgres(e),
            },
            other => StoreError::Pool {
                database: self.database.clone(),
                problem: other.to_string(),
            },
        })
    }

    /// Runs `op` until it succeeds or fails for good, trying again with backoff while it
    /// fails because the store is unavailable, for as long as the pool's patience allows.
    pub(crate) async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T, StoreError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let started = Instant::now();
        let mut pause = Duration::from_millis(100);
        loop {
            let e = match op().await {
                Ok(done) => {
                    self.waiting.store(false, Ordering::Relaxed);
                    return Ok(done);
                }
                Err(e) if !e.is_transient() => return Err(e),
                Err(e) => e,
            };
            let waited = started.elapsed();
            if waited >= self.patience {
                return Err(self.gave_up(e, waited));
            }
            if !self.waiting.swap(true, Ordering::Relaxed)
                && let Some(notice) = &self.notice
            {
                notice(&e, self.patience);
            }
            tokio::time::sleep(pause.min(self.patience - waited)).await;
            pause = (pause * 2).min(MAX_PAUSE);
        }
    }

    fn gave_up(&self, e: StoreError, waited: Duration) -> StoreError {
        if self.patience.is_zero() {
            return e;
        }
        StoreError::Unavailable {
            database: self.database.clone(),
            secs: waited.as_secs(),
            cause: Box::new(e),
        }
    }

    /// Closes connections left idle, now and then, for as long as the pool lives.
    fn reap_idle(&self) {
        let pool = self.pool.clone();
        tokio::spawn(async move {
            while !pool.is_closed() {
                tokio::time::sleep(IDLE).await;
                pool.retain(|_, metrics| metrics.last_used() < IDLE);
            }
        });
    }
}

impl Drop for StorePool {
    fn drop(&mut self) {
        self.pool.close();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A pool that never connects (nothing listens on port 1): `retry` is tested with errors
    /// the operations make up.
    fn pool(patience: Duration, notices: Arc<AtomicUsize>) -> StorePool {
        let (config, _) = prepare("postgres://u@127.0.0.1:1/db").unwrap();
        let manager = Manager::from_config(config, NoTls, ManagerConfig::default());
        let notice: Notice = Arc::new(move |_, _| {
            notices.fetch_add(1, Ordering::Relaxed);
        });
        StorePool {
            pool: Pool::builder(manager)
                .max_size(1)
                .runtime(Runtime::Tokio1)
                .build()
                .unwrap(),
            database: "postgres://u@127.0.0.1:1/db".into(),
            patience,
            notice: Some(notice),
            waiting: AtomicBool::new(false),
        }
    }

    fn away() -> StoreError {
        StoreError::Pool {
            database: "db".into(),
            problem: "closed".into(),
        }
    }

    #[tokio::test]
    async fn an_unavailable_store_is_tried_again_until_it_is_back_and_said_once() {
        let notices = Arc::new(AtomicUsize::new(0));
        let pool = pool(Duration::from_secs(30), notices.clone());
        let calls = AtomicUsize::new(0);
        let calls = &calls;
        let done = pool
            .retry(|| async move {
                match calls.fetch_add(1, Ordering::Relaxed) {
                    0..=2 => Err(away()),
                    n => Ok(n),
                }
            })
            .await;
        assert_eq!(done.unwrap(), 3);
        assert_eq!(notices.load(Ordering::Relaxed), 1);
        // Back: the next outage is said again.
        assert!(!pool.waiting.load(Ordering::Relaxed));
    }

    #[tokio::test]
    async fn past_its_patience_the_store_is_unavailable_exit_10() {
        let pool = pool(Duration::from_millis(300), Arc::default());
        let started = Instant::now();
        let e = pool
            .retry(|| async { Err::<(), _>(away()) })
            .await
            .unwrap_err();
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(matches!(e, StoreError::Unavailable { .. }), "{e}");
        assert_eq!(e.status(), crate::outcome::Status::Unavailable);
        assert!(e.to_string().contains("unavailable for"), "{e}");
    }

    #[tokio::test]
    async fn a_refusal_is_not_waited_for_and_without_patience_nothing_is() {
        let notices = Arc::new(AtomicUsize::new(0));
        let pool_ = pool(Duration::from_secs(30), notices.clone());
        let calls = AtomicUsize::new(0);
        let calls = &calls;
        let e = pool_
            .retry(|| async move {
                calls.fetch_add(1, Ordering::Relaxed);
                Err::<(), _>(StoreError::NoStart)
            })
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::NoStart));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        let pool_ = pool(Duration::ZERO, notices.clone());
        let e = pool_
            .retry(|| async { Err::<(), _>(away()) })
            .await
            .unwrap_err();
        assert!(matches!(e, StoreError::Pool { .. }), "{e}");
        assert_eq!(notices.load(Ordering::Relaxed), 0);
    }

    #[tokio::test]
    async fn a_refused_connection_is_worth_waiting_for() {
        let pool = pool(Duration::ZERO, Arc::default());
        let e = pool.get().await.err().unwrap();
        assert!(e.is_transient(), "{e}");
    }
}
