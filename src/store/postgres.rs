//! The PostgreSQL side of the store: connecting (protected as `tls` says), the versioned schema,
//! the writes as transcript lines arrive, and the reads that rebuild a transcript.

use std::collections::BTreeMap;
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_postgres::config::Host;
use tokio_postgres::types::FromSql;
use tokio_postgres::{Client, Config, IsolationLevel, NoTls, Row};

use super::nul::{escape, escape_value, unescape, unescape_value};
use super::tls::{self, Protection};
use super::{ConnectError, MigrateError, RowError, StoreError, UrlError};
use crate::conversation::Block;
use crate::outcome::Status;
use crate::records::Store;
use crate::transcript::{End, Line, Record, Round, Start, VERSION};

/// Schema versions in order. Each is applied once, in the transaction that records it in
/// `rounds_schema_migrations`; a released one is never edited, only followed by a new one.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_runs.sql")),
    (2, include_str!("migrations/0002_v0_2.sql")),
    (3, include_str!("migrations/0003_batches.sql")),
    (4, include_str!("migrations/0004_redaction.sql")),
];

/// The advisory lock that serializes migrations when several runs start at once against a new
/// database. Any constant unique to rounds will do: this is "rounds" in ASCII.
const MIGRATION_LOCK: i64 = 0x726f_756e_6473;

/// A server that does not answer should fail the run's setup, not hang it.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `block_type` of tool results; the others come from the blocks themselves.
const TOOL_RESULT: &str = "tool_result";

/// One run's connection to the store. Written to only through `Store::write`.
pub struct PgStore {
    client: Client,
    /// Kept to reconnect when the server dropped an idle connection during a long round; it may
    /// hold a password, so it is never shown (there is no `Debug`).
    url: String,
    /// The database as messages name it, without credentials.
    database: String,
    /// Set by the start line; rounds and the end line belong to it.
    run_id: Option<String>,
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
        client,
        url: url.to_owned(),
        database,
        run_id: None,
    })
}

#[async_trait]
impl Store for PgStore {
    async fn write(&mut self, line: &Line) -> Result<(), String> {
        self.write_line(line).await.map_err(|e| e.to_string())
    }
}

impl PgStore {
    /// Rounds can take minutes, and a proxy or a restarted server may drop the connection
    /// meanwhile: a write finding it closed, or failing because it closed, reconnects and tries
    /// once more. Every write is one transaction, so the retry either stores the line whole or
    /// fails visibly (on a duplicate key, if the first commit did land before the drop).
    async fn write_line(&mut self, line: &Line) -> Result<(), StoreError> {
        if self.client.is_closed() {
            self.reconnect().await?;
        }
        match self.apply(line).await {
            Err(e) if self.client.is_closed() || e.is_connection_lost() => {
                self.reconnect().await?;
                self.apply(line).await
            }
            done => done,
        }
    }

    async fn reconnect(&mut self) -> Result<(), StoreError> {
        let (client, _) = open(&self.url).await?;
        self.client = client;
        Ok(())
    }

    async fn apply(&mut self, line: &Line) -> Result<(), StoreError> {
        match line {
            Line::Start(start) => self.start(start).await,
            Line::Round(round) => self.round(round).await,
            Line::End(end) => self.end(end).await,
        }
    }

    async fn start(&mut self, start: &Start) -> Result<(), StoreError> {
        let fail = database_error(&self.database);
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
        // The user's turn, in the same block shape as the model's text.
        let prompt = escape_value(serde_json::json!({"type": "text", "text": start.prompt}));
        let tx = self.client.transaction().await.map_err(&fail)?;
        tx.execute(
            "INSERT INTO runs (run_id, started_at, start_time, provider, model, workspace, \
             prompt, system, tools, limits, resumed_from, sandbox, redaction) \
             VALUES ($1, $2::text::timestamptz, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
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
            ],
        )
        .await
        .map_err(&fail)?;
        tx.execute(
            "INSERT INTO turn_blocks (run_id, round, sequence, block_type, content) \
             VALUES ($1, 0, 0, 'text_content', $2)",
            &[&run_id, &prompt],
        )
        .await
        .map_err(&fail)?;
        tx.commit().await.map_err(&fail)?;
        self.run_id = Some(run_id);
        Ok(())
    }

    async fn round(&mut self, round: &Round) -> Result<(), StoreError> {
        let run_id = self.current_run()?;
        let fail = database_error(&self.database);
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
        let tx = self.client.transaction().await.map_err(&fail)?;
        tx.execute(
            "INSERT INTO turn_rounds (run_id, round, meta) VALUES ($1, $2, $3)",
            &[&run_id, &number, &meta],
        )
        .await
        .map_err(&fail)?;
        if !types.is_empty() {
            tx.execute(
                "INSERT INTO turn_blocks (run_id, round, sequence, block_type, content) \
                 SELECT $1, $2, (b.n - 1)::int, b.block_type, b.content \
                 FROM unnest($3::text[], $4::jsonb[]) WITH ORDINALITY AS b(block_type, content, n)",
                &[&run_id, &number, &types, &contents],
            )
            .await
            .map_err(&fail)?;
        }
        tx.commit().await.map_err(&fail)
    }

    async fn end(&mut self, end: &End) -> Result<(), StoreError> {
        let run_id = self.current_run()?;
        let fail = database_error(&self.database);
        let duration_ms = i64::try_from(end.duration_ms).map_err(|_| StoreError::TooLarge {
            what: "duration_ms".into(),
            column_type: "a bigint",
        })?;
        let updated = self
            .client
            .execute(
                "UPDATE runs SET ended_at = now(), status = $2, exit_code = $3, rounds = $4, \
                 final_text = $5, usage = $6, duration_ms = $7, error = $8, tool_calls = $9, \
                 tool_errors = $10, cost_usd = $11 WHERE run_id = $1",
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
                ],
            )
            .await
            .map_err(&fail)?;
        if updated != 1 {
            return Err(StoreError::Vanished {
                run_id: unescape(&run_id).into_owned(),
            });
        }
        Ok(())
    }

    fn current_run(&self) -> Result<String, StoreError> {
        self.run_id.clone().ok_or(StoreError::NoStart)
    }
}

/// The transcript of a stored run as JSONL: its start line, every round it finished and, if it
/// ended, its end line, reading back equal to what its transcript file holds.
pub async fn export(url: &str, run_id: &str) -> Result<String, StoreError> {
    let (mut client, database) = open(url).await?;
    let fail = database_error(&database);
    let unknown = || StoreError::UnknownRun {
        run_id: run_id.to_owned(),
        database: database.clone(),
    };
    // One snapshot for all three reads, so a run being written meanwhile exports consistently.
    let tx = client
        .build_transaction()
        .read_only(true)
        .isolation_level(IsolationLevel::RepeatableRead)
        .start()
        .await
        .map_err(&fail)?;
    // A database no run was ever kept in has no tables: the run is unknown, nothing failed.
    let has_tables: bool = tx
        .query_one(
            "SELECT to_regclass('rounds_schema_migrations') IS NOT NULL",
            &[],
        )
        .await
        .map_err(&fail)?
        .try_get(0)
        .map_err(&fail)?;
    if !has_tables {
        return Err(unknown());
    }
    let key = escape(run_id);
    let Some(run) = tx
        .query_opt(
            // `sandbox` came with schema version 2 and `redaction` with 4; export does not
            // migrate (it only reads), so an older database is read through to_jsonb, where
            // they are simply absent.
            "SELECT start_time, provider, model, workspace, prompt, system, tools, limits, \
             resumed_from, status, exit_code, rounds, final_text, usage, duration_ms, error, \
             tool_calls, tool_errors, to_jsonb(r) -> 'sandbox' AS sandbox, \
             to_jsonb(r) -> 'redaction' AS redaction, \
             to_jsonb(r) -> 'cost_usd' AS cost_usd \
             FROM runs r WHERE run_id = $1",
            &[&key],
        )
        .await
        .map_err(&fail)?
    else {
        return Err(unknown());
    };
    let rounds = tx
        .query(
            "SELECT round, meta FROM turn_rounds WHERE run_id = $1 ORDER BY round",
            &[&key],
        )
        .await
        .map_err(&fail)?;
    let blocks = tx
        .query(
            "SELECT round, block_type, content FROM turn_blocks \
             WHERE run_id = $1 AND round > 0 ORDER BY round, sequence",
            &[&key],
        )
        .await
        .map_err(&fail)?;
    tx.commit().await.map_err(&fail)?;
    let corrupt = |problem| StoreError::Corrupt {
        run_id: run_id.to_owned(),
        problem,
    };
    let lines = rebuild(run_id, &run, &rounds, &blocks).map_err(corrupt)?;
    let mut jsonl = String::new();
    for line in lines {
        let text = serde_json::to_string(&Record { v: VERSION, line }).map_err(encode)?;
        jsonl.push_str(&text);
        jsonl.push('\n');
    }
    Ok(jsonl)
}

/// The transcript lines of one run from its rows: its start, its rounds and, if it ended, its
/// end.
fn rebuild(run_id: &str, run: &Row, rounds: &[Row], blocks: &[Row]) -> Result<Vec<Line>, RowError> {
    let mut lines = vec![Line::Start(start_line(run_id, run)?)];
    lines.extend(round_lines(rounds, blocks)?.into_iter().map(Line::Round));
    lines.extend(end_line(run)?.map(Line::End));
    Ok(lines)
}

fn start_line(run_id: &str, run: &Row) -> Result<Start, RowError> {
    Ok(Start {
        run_id: run_id.to_owned(),
        time: text(run, "start_time")?,
        provider: text(run, "provider")?,
        model: text(run, "model")?,
        workspace: text(run, "workspace")?,
        prompt: text(run, "prompt")?,
        system: text(run, "system")?,
        tools: decode(run, "tools")?,
        limits: decode(run, "limits")?,
        resumed_from: get::<Option<String>>(run, "resumed_from")?
            .map(|s| unescape(&s).into_owned()),
        // Columns a run from before their migration does not have (see `export`).
        sandbox: decode_added(run, "sandbox")?,
        redaction: decode_added(run, "redaction")?.unwrap_or_default(),
    })
}

/// Each round from its meta row with its blocks, then its results, in the order they were
/// written.
fn round_lines(rounds: &[Row], blocks: &[Row]) -> Result<Vec<Round>, RowError> {
    let mut contents: BTreeMap<i32, (Vec<Value>, Vec<Value>)> = BTreeMap::new();
    for row in blocks {
        let entry = contents.entry(get(row, "round")?).or_default();
        let content: Value = get(row, "content")?;
        if get::<String>(row, "block_type")? == TOOL_RESULT {
            entry.1.push(content);
        } else {
            entry.0.push(content);
        }
    }
    let mut lines = Vec::with_capacity(rounds.len());
    for row in rounds {
        let number: i32 = get(row, "round")?;
        let mut meta: Value = get(row, "meta")?;
        let (blocks, results) = contents.remove(&number).unwrap_or_default();
        let Value::Object(fields) = &mut meta else {
            return Err(RowError::MetaNotObject(number));
        };
        fields.insert("blocks".into(), Value::Array(blocks));
        fields.insert("results".into(), Value::Array(results));
        let round =
            serde_json::from_value(unescape_value(meta)).map_err(|source| RowError::Round {
                round: number,
                source,
            })?;
        lines.push(round);
    }
    if let Some(number) = contents.keys().next() {
        return Err(RowError::Orphans(*number));
    }
    Ok(lines)
}

/// The end line, if the run ended (its status is set).
fn end_line(run: &Row) -> Result<Option<End>, RowError> {
    let Some(status) = get::<Option<String>>(run, "status")? else {
        return Ok(None);
    };
    let int = |column| get::<Option<i32>>(run, column)?.ok_or(RowError::Missing(column));
    let count = |column| u32::try_from(int(column)?).map_err(|_| RowError::OutOfRange(column));
    let duration_ms = get::<Option<i64>>(run, "duration_ms")?
        .and_then(|n| u64::try_from(n).ok())
        .ok_or(RowError::Duration)?;
    let exit_code =
        u8::try_from(int("exit_code")?).map_err(|_| RowError::OutOfRange("exit_code"))?;
    let status = unescape(&status);
    Ok(Some(End {
        status: Status::from_record(&status, exit_code)
            .ok_or_else(|| RowError::UnknownStatus(status.clone().into_owned()))?,
        exit_code,
        rounds: count("rounds")?,
        final_text: text(run, "final_text")?,
        usage: decode(run, "usage")?,
        cost_usd: get::<Option<Value>>(run, "cost_usd")?.and_then(|v| v.as_f64()),
        duration_ms,
        error: get::<Option<String>>(run, "error")?.map(|s| unescape(&s).into_owned()),
        tool_calls: count("tool_calls")?,
        tool_errors: decode(run, "tool_errors")?,
    }))
}

/// Opens a connection and returns it with the database's name for messages.
pub(super) async fn open(url: &str) -> Result<(Client, String), StoreError> {
    if url.trim().is_empty() {
        return Err(StoreError::Url(UrlError::Empty));
    }
    let (mut config, tls) = tls::parse(url).map_err(StoreError::Url)?;
    let database = describe_database(&config);
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(CONNECT_TIMEOUT);
    }
    if config.get_application_name().is_none() {
        config.application_name("rounds");
    }
    let failed = |cause| StoreError::Connect {
        database: database.clone(),
        cause,
    };
    let client = if tls.protection == Protection::Plain {
        let (client, connection) = config
            .connect(NoTls)
            .await
            .map_err(|e| failed(ConnectError::Postgres(e)))?;
        drive(connection);
        client
    } else {
        let connector = tls::connector(&tls).map_err(|e| failed(ConnectError::Tls(Box::new(e))))?;
        let (client, connection) = config
            .connect(connector)
            .await
            .map_err(|e| failed(ConnectError::Postgres(e)))?;
        drive(connection);
        client
    };
    Ok((client, database))
}

/// tokio-postgres hands the socket to a connection future that must be polled for the client
/// to make progress; it ends when the client is dropped.
fn drive<S, T>(connection: tokio_postgres::Connection<S, T>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("store connection closed: {}", describe_error(&e));
        }
    });
}

/// `postgres://user@host:port/db`: enough to tell which database, never the password.
fn describe_database(config: &Config) -> String {
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

fn encode(source: serde_json::Error) -> StoreError {
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

fn get<'a, T: FromSql<'a>>(row: &'a Row, column: &'static str) -> Result<T, RowError> {
    row.try_get(column)
        .map_err(|source| RowError::Column { column, source })
}

fn text(row: &Row, column: &'static str) -> Result<String, RowError> {
    Ok(unescape(&get::<String>(row, column)?).into_owned())
}

fn decode<T: DeserializeOwned>(row: &Row, column: &'static str) -> Result<T, RowError> {
    serde_json::from_value(unescape_value(get(row, column)?))
        .map_err(|source| RowError::Decode { column, source })
}

/// A JSON column that later migrations added: `None` when the row has none.
fn decode_added<T: DeserializeOwned>(
    row: &Row,
    column: &'static str,
) -> Result<Option<T>, RowError> {
    match get::<Option<Value>>(row, column)? {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(unescape_value(v))
            .map(Some)
            .map_err(|source| RowError::Decode { column, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_named_without_the_password() {
        for (url, named) in [
            (
                "postgres://alice:s3cret@db.example:6543/runs?sslmode=disable",
                "postgres://alice@db.example:6543/runs",
            ),
            ("postgresql://h/db", "postgres://h:5432/db"),
            (
                "postgres://bob@[::1]:5432/x?password=s3cret",
                "postgres://bob@[::1]:5432/x",
            ),
            (
                "host=/run/postgresql user=carol password=s3cret dbname=d",
                "postgres://carol@/run/postgresql/d",
            ),
        ] {
            let config: Config = url.parse().unwrap();
            let described = describe_database(&config);
            assert_eq!(described, named);
            assert!(!described.contains("s3cret"));
        }
    }

    #[tokio::test]
    async fn a_bad_or_empty_url_is_a_usage_error_without_the_password() {
        for url in ["", "postgres://u:s3cret@h:notaport/db", "nonsense=1"] {
            let Err(e) = connect(url).await else {
                panic!("{url} connected")
            };
            assert!(matches!(e, StoreError::Url(_)), "{url}: {e}");
            assert_eq!(e.status(), crate::outcome::Status::Usage);
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
    }

    #[test]
    fn migrations_are_numbered_in_order_from_one() {
        let versions: Vec<i32> = MIGRATIONS.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, (1..=MIGRATIONS.len() as i32).collect::<Vec<_>>());
    }
}
