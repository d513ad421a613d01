//! The PostgreSQL side of the store: connecting (protected as `tls` says), the versioned schema
//! and the writes as transcript lines arrive (the reads that rebuild a transcript are `export`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{ClientWrapper, Transaction};
use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::config::Host;
use tokio_postgres::{Client, Config, NoTls};

use super::Store;
use super::nul::{escape, escape_value, unescape};
use super::pool::StorePool;
use super::queue::Fence;
use super::tls::{self, Protection};
use super::{ConnectError, MigrateError, StoreError, UrlError};
use crate::conversation::Block;
use crate::transcript::{End, Line, Round, Start};

/// Schema versions in order. Each is applied once, in the transaction that records it in
/// `rounds_schema_migrations`; a released one is never edited, only followed by a new one.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_runs.sql")),
    (2, include_str!("migrations/0002_v0_2.sql")),
    (3, include_str!("migrations/0003_batches.sql")),
    (4, include_str!("migrations/0004_redaction.sql")),
    (5, include_str!("migrations/0005_failure.sql")),
    (6, include_str!("migrations/0006_fencing.sql")),
    (7, include_str!("migrations/0007_trace_context.sql")),
    (8, include_str!("migrations/0008_subagents_attachments.sql")),
];

/// The advisory lock that serializes migrations when several runs start at once against a new
/// database. Any constant unique to rounds will do: this is "rounds" in ASCII.
const MIGRATION_LOCK: i64 = 0x726f_756e_6473;

/// A server that does not answer should fail the run's setup, not hang it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `block_type` of tool results; the others come from the blocks themselves.
pub(super) const TOOL_RESULT: &str = "tool_result";

/// One run's connection to the store. Written to only through `Store::write`.
pub struct PgStore {
    conn: Conn,
    /// The database as messages name it, without credentials.
    database: String,
    /// Set by the start line; rounds and the end line belong to it.
    run_id: Option<String>,
    /// A queued job's lease: every write is refused once another worker holds the job.
    fence: Option<Fence>,
}

enum Conn {
    /// A single run's own connection.
    Own {
        client: ClientWrapper,
        /// Kept to reconnect when the server dropped an idle connection during a long round;
        /// it may hold a password, so it is never shown (there is no `Debug`).
        url: String,
    },
    /// A worker's job: a connection from the worker's pool for each write, waited for while
    /// the store is away.
    Pooled {
        pool: Arc<StorePool>,
        /// Set when a write gave up on an unavailable store: the job is not to be marked
        /// done, its next worker resumes it.
        gave_up: Arc<AtomicBool>,
    },
}

/// Connects and asks the server one query, changing nothing (`rounds doctor`): the database as
/// messages name it (no password), or why it cannot be used.
pub async fn reachable(url: &str) -> Result<String, StoreError> {
    let (client, database) = open(url).await?;
    client
        .simple_query("SELECT 1")
        .await
        .map_err(database_error(&database))?;
    Ok(database)
}

/// Connects and brings the schema up to date. A failure here is the user's to fix before the run
/// makes its first model call.
pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
    let (mut client, database) = open(url).await?;
    migrate(&mut client)
        .await
        .map_err(|cause| StoreError::Migrate {
            database: database.clone(),
            cause,
        })?;
    Ok(PgStore {
        conn: Conn::Own {
            client,
            url: url.to_owned(),
        },
        database,
        run_id: None,
        fence: None,
    })
}

#[async_trait]
impl Store for PgStore {
    async fn write(&mut self, line: &Line) -> Result<(), StoreError> {
        self.write_line(line).await
    }
}

impl PgStore {
    /// A worker's job's records, written through `pool` (already migrated) under `fence`.
    pub fn pooled(pool: Arc<StorePool>, fence: Fence, gave_up: Arc<AtomicBool>) -> PgStore {
        PgStore {
            database: pool.database.clone(),
            conn: Conn::Pooled { pool, gave_up },
            run_id: None,
            fence: Some(fence),
        }
    }

    async fn write_line(&mut self, line: &Line) -> Result<(), StoreError> {
        let (fence, run_id) = (self.fence.as_ref(), self.run_id.as_deref());
        let written = match &mut self.conn {
            Conn::Own { client, url } => {
                write_own(client, url, &self.database, fence, run_id, line).await
            }
            Conn::Pooled { pool, gave_up } => {
                let written = write_pooled(pool, fence, run_id, line).await;
                if matches!(written, Err(StoreError::Unavailable { .. })) {
                    gave_up.store(true, Ordering::Relaxed);
                }
                written
            }
        };
        if let Some(run_id) = written? {
            self.run_id = Some(run_id);
        }
        Ok(())
    }
}

/// Rounds can take minutes, and a proxy or a restarted server may drop the connection
/// meanwhile: a write finding it closed, or failing because it closed, reconnects and tries
/// once more. Every write is one transaction, so the retry either stores the line whole or
/// fails visibly (on a duplicate key, if the first commit did land before the drop).
async fn write_own(
    client: &mut ClientWrapper,
    url: &str,
    database: &str,
    fence: Option<&Fence>,
    run_id: Option<&str>,
    line: &Line,
) -> Result<Option<String>, StoreError> {
    if client.is_closed() {
        *client = open(url).await?.0;
    }
    match apply(client, database, fence, run_id, line).await {
        Err(e) if client.is_closed() || e.is_connection_lost() => {
            *client = open(url).await?.0;
            apply(client, database, fence, run_id, line).await
        }
        done => done,
    }
}

/// A job's write, tried again on a new connection while the store is unavailable (the pool's
/// patience bounds it). A duplicate key on a later try means the earlier commit landed before
/// its connection went: the line is stored.
async fn write_pooled(
    pool: &StorePool,
    fence: Option<&Fence>,
    run_id: Option<&str>,
    line: &Line,
) -> Result<Option<String>, StoreError> {
    let tries = AtomicU32::new(0);
    let tries = &tries;
    pool.retry(|| async move {
        let again = tries.fetch_add(1, Ordering::Relaxed) > 0;
        let mut client = pool.get().await?;
        match apply(&mut client, &pool.database, fence, run_id, line).await {
            Err(e) if again && e.is_duplicate() => Ok(match line {
                Line::Start(start) => Some(escape(&start.run_id).into_owned()),
                _ => None,
            }),
            done => done,
        }
    })
    .await
}

/// Writes one line in one transaction; the run id a start line begins.
async fn apply(
    client: &mut ClientWrapper,
    database: &str,
    fence: Option<&Fence>,
    run_id: Option<&str>,
    line: &Line,
) -> Result<Option<String>, StoreError> {
    let current = || run_id.ok_or(StoreError::NoStart);
    match line {
        Line::Start(start) => write_start(client, database, fence, start).await.map(Some),
        Line::Round(round) => write_round(client, database, fence, current()?, round)
            .await
            .map(|()| None),
        Line::End(end) => write_end(client, database, fence, current()?, end)
            .await
            .map(|()| None),
        Line::AgentStart(_) | Line::AgentRound(_) | Line::AgentEnd(_) => {
            write_agent_line(client, database, fence, current()?, line)
                .await
                .map(|()| None)
        }
    }
}

/// A subagent's line, whole, after the run's rounds so far (see migration 8).
async fn write_agent_line(
    client: &mut ClientWrapper,
    database: &str,
    fence: Option<&Fence>,
    run_id: &str,
    line: &Line,
) -> Result<(), StoreError> {
    let fail = database_error(database);
    let content = escape_value(to_json(line)?);
    let tx = client.transaction().await.map_err(&fail)?;
    hold(&tx, database, fence).await?;
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO agent_lines (run_id, sequence, after_round, line) VALUES ($1, \
             (SELECT count(*) FROM agent_lines WHERE run_id = $1), \
             (SELECT count(*) FROM turn_rounds WHERE run_id = $1)::integer, $2)",
        )
        .await
        .map_err(&fail)?,
        &[&run_id, &content],
    )
    .await
    .map_err(&fail)?;
    tx.commit().await.map_err(&fail)?;
    Ok(())
}

/// Refuses the write when the job's lease is no longer this worker's, holding the job's row
/// until the transaction ends so that no claim can take it in between.
async fn hold(
    tx: &Transaction<'_>,
    database: &str,
    fence: Option<&Fence>,
) -> Result<(), StoreError> {
    match fence {
        Some(fence) => fence.hold(tx, database).await,
        None => Ok(()),
    }
}

async fn write_start(
    client: &mut ClientWrapper,
    database: &str,
    fence: Option<&Fence>,
    start: &Start,
) -> Result<String, StoreError> {
    let fail = database_error(database);
    let run_id = escape(&start.run_id).into_owned();
    let tools = escape_value(to_json(&start.tools)?);
    let limits = escape_value(to_json(&start.limits)?);
    let sandbox = match &start.sandbox {
        Some(s) => Some(escape_value(to_json(s)?)),
        None => None,
    };
    let redaction = match start.redaction.as_slice() {
        [] => None,
        names => Some(escape_value(to_json(names)?)),
    };
    let attachments = match start.attachments.as_slice() {
        [] => None,
        files => Some(escape_value(to_json(files)?)),
    };
    // The user's turn, in the same block shape as the model's text.
    let prompt = escape_value(serde_json::json!({"type": "text", "text": start.prompt}));
    let tx = client.transaction().await.map_err(&fail)?;
    hold(&tx, database, fence).await?;
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO runs (run_id, started_at, start_time, provider, model, workspace, \
         prompt, system, tools, limits, resumed_from, sandbox, redaction, attachments) \
         VALUES ($1, $2::text::timestamptz, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .await
        .map_err(&fail)?,
        &[
            &run_id,
            &escape(&start.time),
            &escape(&start.provider),
            &escape(&start.model),
            &escape(&start.workspace),
            &escape(&start.prompt),
            &escape(&start.system),
            &tools,
            &limits,
            &start.resumed_from.as_deref().map(escape),
            &sandbox,
            &redaction,
            &attachments,
        ],
    )
    .await
    .map_err(&fail)?;
    tx.execute(
        &tx.prepare_cached(
            "INSERT INTO turn_blocks (run_id, round, sequence, block_type, content) \
         VALUES ($1, 0, 0, 'text_content', $2)",
        )
        .await
        .map_err(&fail)?,
        &[&run_id, &prompt],
    )
    .await
    .map_err(&fail)?;
    tx.commit().await.map_err(&fail)?;
    Ok(run_id)
}

async fn write_round(
    client: &mut ClientWrapper,
    database: &str,
    fence: Option<&Fence>,
    run_id: &str,
    round: &Round,
) -> Result<(), StoreError> {
    let fail = database_error(database);
    let number = to_int(round.round, "round")?;
    let mut types = Vec::with_capacity(round.blocks.len() + round.results.len());
    let mut contents = Vec::with_capacity(types.capacity());
    for block in &round.blocks {
        types.push(block_type(block));
        contents.push(escape_value(to_json(block)?));
    }
    for result in &round.results {
        types.push(TOOL_RESULT);
        contents.push(escape_value(to_json(result)?));
    }
    // Everything but the blocks and results, so that fields added to rounds later survive too.
    let mut meta = to_json(round)?;
    if let Value::Object(fields) = &mut meta {
        fields.remove("blocks");
        fields.remove("results");
    }
    let meta = escape_value(meta);
    let tx = client.transaction().await.map_err(&fail)?;
    hold(&tx, database, fence).await?;
    tx.execute(
        &tx.prepare_cached("INSERT INTO turn_rounds (run_id, round, meta) VALUES ($1, $2, $3)")
            .await
            .map_err(&fail)?,
        &[&run_id, &number, &meta],
    )
    .await
    .map_err(&fail)?;
    if !types.is_empty() {
        tx.execute(
            &tx.prepare_cached(
                "INSERT INTO turn_blocks (run_id, round, sequence, block_type, content) \
             SELECT $1, $2, (b.n - 1)::int, b.block_type, b.content \
             FROM unnest($3::text[], $4::jsonb[]) WITH ORDINALITY AS b(block_type, content, n)",
            )
            .await
            .map_err(&fail)?,
            &[&run_id, &number, &types, &contents],
        )
        .await
        .map_err(&fail)?;
    }
    tx.commit().await.map_err(&fail)
}

async fn write_end(
    client: &mut ClientWrapper,
    database: &str,
    fence: Option<&Fence>,
    run_id: &str,
    end: &End,
) -> Result<(), StoreError> {
    let fail = database_error(database);
    let duration_ms = i64::try_from(end.duration_ms).map_err(|_| StoreError::TooLarge {
        what: "duration_ms".into(),
        column_type: "a bigint",
    })?;
    let tx = client.transaction().await.map_err(&fail)?;
    hold(&tx, database, fence).await?;
    let updated = tx
        .execute(
            &tx.prepare_cached(
                "UPDATE runs SET ended_at = now(), status = $2, exit_code = $3, rounds = $4, \
             final_text = $5, usage = $6, duration_ms = $7, error = $8, tool_calls = $9, \
             tool_errors = $10, cost_usd = $11, failure = $12 WHERE run_id = $1",
            )
            .await
            .map_err(&fail)?,
            &[
                &run_id,
                &end.status.as_str(),
                &i32::from(end.exit_code),
                &to_int(end.rounds, "rounds")?,
                &escape(&end.final_text),
                &escape_value(to_json(&end.usage)?),
                &duration_ms,
                &end.error.as_deref().map(escape),
                &to_int(end.tool_calls, "tool_calls")?,
                &escape_value(to_json(&end.tool_errors)?),
                &end.cost_usd,
                &end.failure.as_ref().map(to_json).transpose()?,
            ],
        )
        .await
        .map_err(&fail)?;
    if updated != 1 {
        return Err(StoreError::Vanished {
            run_id: unescape(run_id).into_owned(),
        });
    }
    tx.commit().await.map_err(&fail)
}

/// The connection settings and protection `url` asks for, with rounds' defaults.
pub(super) fn prepare(url: &str) -> Result<(Config, tls::Tls), StoreError> {
    if url.trim().is_empty() {
        return Err(StoreError::Url(UrlError::Empty));
    }
    let (mut config, tls) = tls::parse(url).map_err(StoreError::Url)?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("rounds");
    }
    Ok((config, tls))
}

/// Opens a connection and returns it with the database's name for messages. The connection
/// keeps the statements it prepared (`prepare_cached`), as the pool's connections do.
pub(super) async fn open(url: &str) -> Result<(ClientWrapper, String), StoreError> {
    let (config, tls) = prepare(url)?;
    let database = describe_database(&config);
    let failed = |cause| StoreError::Connect {
        database: database.clone(),
        cause,
    };
    let client = if tls.protection == Protection::Plain {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| failed(ConnectError::Postgres(e)))?;
        ClientWrapper::new(client, drive(connection))
    } else {
        let connector = tls::connector(&tls).map_err(|e| failed(ConnectError::Tls(Box::new(e))))?;
        let (client, connection) = config
            .connect(connector)
            .await
            .map_err(|e| failed(ConnectError::Postgres(e)))?;
        ClientWrapper::new(client, drive(connection))
    };
    Ok((client, database))
}

/// tokio-postgres hands the socket to a connection future that must be polled for the client
/// to make progress; it ends when the client is dropped.
fn drive<S, T>(connection: tokio_postgres::Connection<S, T>) -> tokio::task::JoinHandle<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("store connection closed: {}", describe_error(&e));
        }
    })
}

/// `postgres://user@host:port/db`: enough to tell which database, never the password.
pub(super) fn describe_database(config: &Config) -> String {
    let ports = config.get_ports();
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| {
            let name = match host {
                Host::Tcp(name) if name.contains(':') => format!("[{name}]"),
                Host::Tcp(name) => name.clone(),
                Host::Unix(path) => path.display().to_string(),
            };
            match ports.get(i).or(ports.first()) {
                Some(port) => format!("{name}:{port}"),
                None => name,
            }
        })
        .collect();
    let user = config
        .get_user()
        .map(|u| format!("{u}@"))
        .unwrap_or_default();
    let db = config.get_dbname().unwrap_or_default();
    format!("postgres://{user}{}/{db}", hosts.join(","))
}

/// An error with its causes ("error connecting to server: Connection refused"), or the server's
/// own message.
pub(super) fn describe_error(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut message = format!("{}: {}", db.severity(), db.message());
        if let Some(detail) = db.detail() {
            message.push_str(&format!(" ({detail})"));
        }
        return message;
    }
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        message.push_str(&format!(": {c}"));
        cause = c.source();
    }
    message
}

pub(super) fn database_error(database: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
    move |source| StoreError::Database {
        database: database.to_owned(),
        source,
    }
}

/// Whether `e` means the session ended rather than that a statement failed: the client saw the
/// connection close, or the server said it is ending it (SQLSTATE class 08, connection
/// exception, or 57P, operator intervention such as pg_terminate_backend or a shutdown). The
/// client can report such an error before its connection task has marked it closed.
pub(super) fn connection_lost(e: &tokio_postgres::Error) -> bool {
    let class = e.code().map(|c| c.code()).unwrap_or_default();
    e.is_closed() || class.starts_with("08") || class.starts_with("57P")
}

/// Whether `e` means the store is unavailable for now: the session ended or could not go on
/// (`connection_lost`, or the socket failed under it), or the server is short of resources
/// (SQLSTATE class 53: "too many clients", out of memory or disk) or not accepting sessions
/// yet (57P03, starting up).
pub(super) fn unavailable(e: &tokio_postgres::Error) -> bool {
    let class = e.code().map(|c| c.code()).unwrap_or_default();
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    connection_lost(e) || io || class.starts_with("53")
}

/// Creates or updates the schema. Taken under a transaction-scoped advisory lock, so runs that
/// start together against a new database wait for one another instead of racing to create the
/// same tables; a database already at the latest version costs one short transaction.
pub(super) async fn migrate(client: &mut Client) -> Result<(), MigrateError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS rounds_schema_migrations (\
         version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .await?;
    let mut applied = Vec::new();
    for row in tx
        .query("SELECT version FROM rounds_schema_migrations", &[])
        .await?
    {
        applied.push(row.try_get::<_, i32>(0)?);
    }
    let known = MIGRATIONS.last().map_or(0, |(v, _)| *v);
    if let Some(found) = applied.iter().copied().filter(|v| *v > known).max() {
        return Err(MigrateError::Newer { found, known });
    }
    for (version, sql) in MIGRATIONS {
        if applied.contains(version) {
            continue;
        }
        tx.batch_execute(sql)
            .await
            .map_err(|source| MigrateError::Step {
                version: *version,
                source,
            })?;
        tx.execute(
            "INSERT INTO rounds_schema_migrations (version, applied_at) VALUES ($1, now())",
            &[version],
        )
        .await?;
    }
    Ok(tx.commit().await?)
}

fn block_type(block: &Block) -> &'static str {
    match block {
        Block::Text { .. } => "text",
        // Redacted reasoning is still reasoning; its own JSON keeps it distinct.
        Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Reasoning { .. } => {
            "thinking"
        }
        Block::ToolUse(_) => "tool_use",
    }
}

pub(super) fn encode(source: serde_json::Error) -> StoreError {
    StoreError::Encode {
        what: "a line",
        source,
    }
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<Value, StoreError> {
    serde_json::to_value(value).map_err(encode)
}

fn to_int(n: u32, what: &str) -> Result<i32, StoreError> {
    i32::try_from(n).map_err(|_| StoreError::TooLarge {
        what: format!("{what} {n}"),
        column_type: "an int",
    })
}

#[cfg(test)]
mod tests;
