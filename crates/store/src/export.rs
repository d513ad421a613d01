//! `rounds export`: a stored run read back from its rows as the transcript its file holds.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_postgres::types::FromSql;
use tokio_postgres::{Client, IsolationLevel, Row};

use super::nul::{escape, unescape, unescape_value};
use super::pool::StorePool;
use super::postgres::{TOOL_RESULT, database_error, encode, open};
use super::{RowError, StoreError};
use crate::outcome::Status;
use crate::transcript::{End, Line, Record, Round, Start, VERSION};

/// The transcript of a stored run as JSONL: its start line, every round it finished and, if it
/// ended, its end line, reading back equal to what its transcript file holds.
pub async fn export(url: &str, run_id: &str) -> Result<String, StoreError> {
    let (mut client, database) = open(url).await?;
    export_from(&mut client, &database, run_id).await
}

/// [`export`] through a worker's pool, waiting for an unavailable store as its writes do.
pub async fn export_pooled(pool: &StorePool, run_id: &str) -> Result<String, StoreError> {
    pool.retry(|| async move {
        let mut client = pool.get().await?;
        export_from(&mut client, &pool.database, run_id).await
    })
    .await
}

async fn export_from(
    client: &mut Client,
    database: &str,
    run_id: &str,
) -> Result<String, StoreError> {
    let fail = database_error(database);
    let unknown = || StoreError::UnknownRun {
        run_id: run_id.to_owned(),
        database: database.to_owned(),
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
    if !has_table(&tx, database, "rounds_schema_migrations").await? {
        return Err(unknown());
    }
    let key = escape(run_id);
    let Some(run) = tx
        .query_opt(
            // `sandbox` came with schema version 2, `redaction` with 4 and `failure` with 5;
            // export does not migrate (it only reads), so an older database is read through
            // to_jsonb, where they are simply absent.
            "SELECT start_time, provider, model, workspace, prompt, system, tools, limits, \
             resumed_from, status, exit_code, rounds, final_text, usage, duration_ms, error, \
             tool_calls, tool_errors, to_jsonb(r) -> 'sandbox' AS sandbox, \
             to_jsonb(r) -> 'redaction' AS redaction, \
             to_jsonb(r) -> 'cost_usd' AS cost_usd, to_jsonb(r) -> 'failure' AS failure, \
             to_jsonb(r) -> 'attachments' AS attachments \
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
    let agents = agent_rows(&tx, database, &key).await?;
    tx.commit().await.map_err(&fail)?;
    let corrupt = |problem| StoreError::Corrupt {
        run_id: run_id.to_owned(),
        problem,
    };
    let lines = rebuild(run_id, &run, &rounds, &blocks, &agents).map_err(corrupt)?;
    let mut jsonl = String::new();
    for line in lines {
        let text = serde_json::to_string(&Record { v: VERSION, line }).map_err(encode)?;
        jsonl.push_str(&text);
        jsonl.push('\n');
    }
    Ok(jsonl)
}

/// Whether the database has the table `name` (in the search path).
async fn has_table(
    tx: &tokio_postgres::Transaction<'_>,
    database: &str,
    name: &str,
) -> Result<bool, StoreError> {
    let fail = database_error(database);
    tx.query_one("SELECT to_regclass($1::text) IS NOT NULL", &[&name])
        .await
        .map_err(&fail)?
        .try_get(0)
        .map_err(&fail)
}

/// A run's subagent lines, in order (they came with schema version 8: a database from before
/// has no such table, and no subagents).
async fn agent_rows(
    tx: &tokio_postgres::Transaction<'_>,
    database: &str,
    key: &str,
) -> Result<Vec<Row>, StoreError> {
    let fail = database_error(database);
    if !has_table(tx, database, "agent_lines").await? {
        return Ok(Vec::new());
    }
    tx.query(
        "SELECT after_round, line FROM agent_lines WHERE run_id = $1 ORDER BY sequence",
        &[&key],
    )
    .await
    .map_err(&fail)
}

/// The transcript lines of one run from its rows: its start, its rounds with its subagents'
/// lines where they were written and, if it ended, its end.
fn rebuild(
    run_id: &str,
    run: &Row,
    rounds: &[Row],
    blocks: &[Row],
    agents: &[Row],
) -> Result<Vec<Line>, RowError> {
    let mut lines = vec![Line::Start(start_line(run_id, run)?)];
    let mut agents = agents.iter().peekable();
    let mut before = |lines: &mut Vec<Line>, done: i32| -> Result<(), RowError> {
        while let Some(row) =
            agents.next_if(|row| get::<i32>(row, "after_round").is_ok_and(|n| n <= done))
        {
            lines.push(decode(row, "line")?);
        }
        Ok(())
    };
    for (done, round) in round_lines(rounds, blocks)?.into_iter().enumerate() {
        before(&mut lines, done as i32)?;
        lines.push(Line::Round(round));
    }
    before(&mut lines, i32::MAX)?;
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
        // The store keeps the turn (`prompt`), which holds the files, not their list.
        project_docs: Vec::new(),
        system: text(run, "system")?,
        tools: decode(run, "tools")?,
        limits: decode(run, "limits")?,
        resumed_from: get::<Option<String>>(run, "resumed_from")?
            .map(|s| unescape(&s).into_owned()),
        // Columns a run from before their migration does not have (see `export`).
        sandbox: decode_added(run, "sandbox")?,
        redaction: decode_added(run, "redaction")?.unwrap_or_default(),
        attachments: decode_added(run, "attachments")?.unwrap_or_default(),
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
        failure: decode_added(run, "failure")?,
        tool_calls: count("tool_calls")?,
        tool_errors: decode(run, "tool_errors")?,
    }))
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
