//! A Rust program that runs rounds' loop in-process: the recorded demo run of the README's
//! quick start, replayed with its tools really running in the demo workspace.
//!
//! `cargo run --example embed` prints each event as it happens and the outcome, and exits with
//! the status the `rounds` command would have. `cargo run --example embed -- MODEL PROMPT
//! [FLAG=VALUE]...` runs another model (its key in the environment, as for the command) with
//! any of the command's flags (`allow=bash`, `max-rounds=3`, `workspace=DIR`).

use std::process::ExitCode;

fn main() -> ExitCode {
    // Tools run under a supervisor that is this very program, started again.
    if let Some(code) = rounds::supervise_if_asked() {
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let run = match args.as_slice() {
        [] => rounds::Run::new(
            "replay:fixtures/demo/demo.jsonl",
            "How are requests retried?",
        )
        .workspace("fixtures/demo/workspace")
        .allow("read_file")
        .allow("list_dir")
        .allow("glob")
        .allow("grep")
        .max_rounds(10)
        .no_transcript(),
        [model, prompt, flags @ ..] => {
            flags
                .iter()
                .fold(rounds::Run::new(model, prompt), |run, f| {
                    match f.split_once('=') {
                        Some((name, value)) => run.flag(name, Some(value)),
                        None => run.flag(f, None),
                    }
                })
        }
        [_] => {
            eprintln!("usage: embed [MODEL PROMPT [FLAG=VALUE]...]");
            return ExitCode::from(2);
        }
    };
    let started = match run.start() {
        Ok(started) => started,
        Err(e) => {
            eprintln!("embed: {e}");
            return ExitCode::from(e.status().exit_code());
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("embed: cannot start a runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let rounds::Started {
        mut events,
        outcome,
    } = started;
    let watch = async {
        while let Some(event) = events.next().await {
            match event {
                rounds::Event::RoundStarted(n) => println!("round {n}"),
                rounds::Event::ToolStarted(call, _) => println!("  tool {}", call.name),
                rounds::Event::ToolFinished(result) => {
                    println!("  result of {}: {} bytes", result.name, result.bytes)
                }
                rounds::Event::Finished(end) => println!("end: {}", end.status.as_str()),
                _ => {}
            }
        }
    };
    let (outcome, ()) = runtime.block_on(async { tokio::join!(outcome, watch) });
    println!("{}", outcome.final_text);
    ExitCode::from(outcome.status.exit_code())
}
