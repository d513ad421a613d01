//! The JSON Schema of every line rounds writes (`schema/rounds.schema.json`), generated from the
//! serde types that write them, so the two cannot drift: doc comments are the descriptions,
//! serde's attributes decide the tags and which fields may be absent, and `#[schemars(…)]` adds
//! what serde does not know (unknown fields refused, bounds, formats). `tests/suite/schema.rs`
//! fails when the committed file is not [`document`] (and rewrites it when asked).

use std::borrow::Cow;

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::outcome::Status;
use crate::transcript::{Event, VERSION};

/// Where the schema is published (its `$id`).
const ID: &str = "https://github.com/rounds/rounds/schema/rounds.schema.json";

/// The whole schema: one line is exactly one of the line types, each a `$defs` entry named by
/// its `type` (`start`, `round`, `end`, and the stream's `text_delta`, `thinking_delta`,
/// `tool_use`, `tool_result`, `retry`), beside the definitions they share (named by their
/// Rust types, so the two never collide).
pub fn document() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .with_transform(RecursiveTransform(absent_is_never_null))
        .with_transform(RecursiveTransform(tidy))
        .into_generator();
    let mut root = match Value::from(generator.into_root_schema_for::<Event>()) {
        Value::Object(root) => root,
        _ => Map::new(),
    };
    let mut defs = match root.remove("$defs") {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    let variants = match root.remove("oneOf") {
        Some(Value::Array(variants)) => variants,
        _ => Vec::new(),
    };
    let mut lines = Vec::new();
    for mut variant in variants {
        let Some(tag) = variant["properties"]["type"]["const"]
            .as_str()
            .map(str::to_owned)
        else {
            continue;
        };
        versioned(&mut variant);
        lines.push(json!({ "$ref": format!("#/$defs/{tag}") }));
        defs.insert(tag, variant);
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": ID,
        "title": format!("rounds transcript lines and stream-json events (v{VERSION})"),
        "description": "Every line rounds writes to a transcript (start, round, end, and its \
                        subagents' agent_start, agent_round, agent_end) and every line of \
                        --output stream-json (those plus text_delta, thinking_delta, tool_use, \
                        tool_result, check, retry). Generated from the types that write them \
                        (crates/base/src/schema.rs).",
        "oneOf": lines,
        "$defs": defs,
    })
}

/// Adds the `v` every line starts with (serde writes it from the line's wrapper, which has no
/// schema of its own: a flattened enum's variants could not refuse unknown fields).
fn versioned(line: &mut Value) {
    let version = json!({
        "description": "The format's version.",
        "const": VERSION,
    });
    if let Some(properties) = line["properties"].as_object_mut() {
        properties.insert("v".into(), version);
    }
    if let Some(required) = line["required"].as_array_mut() {
        required.insert(0, "v".into());
    }
}

/// rounds leaves a field out rather than writing `null` (`skip_serializing_if`): a property
/// that may be absent is never null, though its Rust type is an `Option`.
fn absent_is_never_null(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let required: Vec<Value> = match object.get("required") {
        Some(Value::Array(required)) => required.clone(),
        _ => Vec::new(),
    };
    let Some(Value::Object(properties)) = object.get_mut("properties") else {
        return;
    };
    for (name, property) in properties.iter_mut() {
        if !required.contains(&Value::String(name.clone())) {
            drop_null(property);
        }
    }
}

/// Takes out what describes the Rust types rather than the lines: `format`s that name a Rust
/// number type (`uint32`, `double`: no JSON Schema format; the bounds stay), `default`s (a
/// line holds every field it needs), and the line breaks of doc comments inside a paragraph.
fn tidy(schema: &mut Schema) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    object.remove("default");
    if object
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| f.starts_with("int") || f.starts_with("uint") || f == "double")
    {
        object.remove("format");
    }
    if let Some(Value::String(description)) = object.get_mut("description") {
        let paragraphs: Vec<String> = description
            .split("\n\n")
            .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        *description = paragraphs.join("\n\n");
    }
}

/// `T or null` (`"type": [T, "null"]`, or `anyOf` a reference and null) becomes `T`.
fn drop_null(property: &mut Value) {
    let Some(object) = property.as_object_mut() else {
        return;
    };
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            object.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    if let Some(Value::Array(options)) = object.get_mut("anyOf") {
        options.retain(|o| o.get("type").and_then(Value::as_str) != Some("null"));
        if let [Value::Object(only)] = options.as_slice() {
            let only = only.clone();
            object.remove("anyOf");
            for (key, value) in only {
                object.entry(key).or_insert(value);
            }
        }
    }
}

/// A status as records write it: by name (`Status` serializes itself by hand, so it cannot
/// derive its schema).
impl JsonSchema for Status {
    fn schema_name() -> Cow<'static, str> {
        "Status".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let mut names: Vec<&str> = Status::OF_A_RUN.iter().map(|s| s.as_str()).collect();
        names.dedup();
        json_schema!({
            "description": "How the run ended (README, \"Exit status\"); `interrupted` is SIGINT, \
                            SIGTERM or a closed stdout, told apart by the exit code.",
            "type": "string",
            "enum": names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_a_run_ends_with_is_listed_and_reads_back() {
        // A new Status variant stops this match from compiling: list it in Status::OF_A_RUN, or
        // here as no run's (as `incomplete` is), and regenerate the schema.
        let listed = |s: Status| match s {
            Status::Completed
            | Status::Error
            | Status::Usage
            | Status::MaxRounds
            | Status::Budget
            | Status::Timeout
            | Status::ToolFailure
            | Status::Schema
            | Status::Stuck
            | Status::CheckFailed
            | Status::Unavailable
            | Status::Interrupted(_) => Status::OF_A_RUN.contains(&s),
            Status::Incomplete => !Status::OF_A_RUN.contains(&s),
        };
        for status in Status::OF_A_RUN {
            assert!(listed(status), "{status:?}");
            let back = Status::from_record(status.as_str(), status.exit_code());
            assert_eq!(back, Some(status));
        }
        assert!(listed(Status::Incomplete));
    }

    #[test]
    fn every_line_type_is_a_definition_named_by_its_tag() {
        let doc = document();
        let lines = doc["oneOf"].as_array().unwrap();
        let tags: Vec<&str> = lines
            .iter()
            .map(|l| l["$ref"].as_str().unwrap().trim_start_matches("#/$defs/"))
            .collect();
        assert_eq!(
            tags,
            [
                "start",
                "text_delta",
                "thinking_delta",
                "tool_use",
                "tool_result",
                "check",
                "retry",
                "round",
                "end",
                "agent_start",
                "agent_round",
                "agent_end"
            ]
        );
        for tag in tags {
            let line = &doc["$defs"][tag];
            assert_eq!(line["properties"]["type"]["const"], tag);
            assert_eq!(line["properties"]["v"]["const"], VERSION);
            assert_eq!(line["required"][0], "v", "{tag}");
            assert_eq!(line["additionalProperties"], false, "{tag}");
        }
    }
}
