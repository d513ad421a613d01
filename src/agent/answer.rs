//! `--output-schema`: the final answer must be JSON that validates against the user's schema.
//! Providers with native structured output get the schema with every request; the others get
//! an instruction. The answer is checked here either way, and an answer that fails gets one
//! corrective turn quoting the validation errors before the run ends with status `schema`.

use serde_json::Value;

/// The schema itself is not one that compiles.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct InvalidSchema(#[source] Box<jsonschema::ValidationError<'static>>);

/// Why a final answer is not an acceptable one; the message is what the model is shown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    #[error("the final answer is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// Each validation error, with where in the answer it is.
    #[error(
        "the final answer does not validate against --output-schema:\n{}",
        .0.join("\n")
    )]
    Invalid(Vec<String>),
}

/// A compiled output schema.
pub(crate) struct OutputSchema {
    pub(crate) schema: Value,
    validator: jsonschema::Validator,
}

impl OutputSchema {
    pub(crate) fn new(schema: Value) -> Result<OutputSchema, InvalidSchema> {
        let validator =
            jsonschema::validator_for(&schema).map_err(|e| InvalidSchema(Box::new(e)))?;
        Ok(OutputSchema { schema, validator })
    }

    /// What the system prompt says when the provider has no native structured output.
    pub(crate) fn instruction(&self) -> String {
        format!(
            "\n\nYour final answer (the message without tool calls) must be only a JSON value, \
             with no other text, that validates against this JSON Schema:\n{}\n",
            self.schema
        )
    }

    /// The answer as JSON, or why it is not an acceptable one (one error per line).
    pub(crate) fn check(&self, answer: &str) -> Result<Value, AnswerError> {
        let text = unfenced(answer.trim());
        let value: Value = serde_json::from_str(text).map_err(AnswerError::NotJson)?;
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .map(|e| match e.instance_path().to_string() {
                path if path.is_empty() => e.to_string(),
                path => format!("{path}: {e}"),
            })
            .collect();
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(AnswerError::Invalid(errors))
        }
    }

    /// The user turn that asks for the answer again.
    pub(crate) fn corrective(&self, errors: &AnswerError) -> String {
        format!(
            "{errors}\n\nReply again with only the corrected JSON value, no other text, valid \
             against the JSON Schema you were given."
        )
    }
}

/// The JSON inside one Markdown code fence, if the whole answer is one; models add fences
/// even when told not to.
fn unfenced(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return text;
    };
    // Past the info string (`json`) on the fence's line.
    body.split_once('\n')
        .map_or(body, |(_, inner)| inner)
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> OutputSchema {
        OutputSchema::new(json!({
            "type": "object",
            "properties": {"files": {"type": "integer", "minimum": 0}},
            "required": ["files"],
            "additionalProperties": false
        }))
        .unwrap()
    }

    #[test]
    fn answers_are_parsed_fenced_or_not_and_validated() {
        let s = schema();
        assert_eq!(s.check("{\"files\": 3}").unwrap(), json!({"files": 3}));
        assert_eq!(
            s.check("```json\n{\"files\": 3}\n```").unwrap(),
            json!({"files": 3})
        );
        let err = s.check("{\"files\": -1, \"x\": 1}").unwrap_err();
        assert!(
            matches!(&err, AnswerError::Invalid(errors) if errors.len() == 2),
            "{err}"
        );
        let err = err.to_string();
        assert!(
            err.contains("/files: -1 is less than the minimum of 0"),
            "{err}"
        );
        assert!(err.contains("Additional properties"), "{err}");
        let err = s.check("There are 3 files.").unwrap_err();
        assert!(matches!(err, AnswerError::NotJson(_)), "{err}");
        assert!(
            err.to_string().starts_with("the final answer is not JSON"),
            "{err}"
        );
        assert!(s.corrective(&err).contains("Reply again"));
        assert!(OutputSchema::new(json!({"type": 12})).is_err());
    }
}
