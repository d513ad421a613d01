use std::time::Instant;

use serde_json::json;

use super::*;

fn offered() -> Vec<String> {
    ["read_file", "glob"].map(String::from).to_vec()
}

fn names(text: &str) -> Vec<String> {
    extract(text, &offered())
        .map(|f| f.calls.into_iter().map(|c| c.name).collect())
        .unwrap_or_default()
}

#[test]
fn the_forms_small_models_write_are_calls() {
    let cases = [
        (
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>",
            1,
        ),
        (
            "I will read it.\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n```\n",
            1,
        ),
        (
            "```\n{\"name\": \"glob\", \"parameters\": {\"pattern\": \"*.py\"}}\n```",
            1,
        ),
        (
            "{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"a.txt\\\"}\"}",
            1,
        ),
        // Unclosed: the model stopped right after the call.
        (
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
            1,
        ),
        (
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n<tool_call>{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}</tool_call>",
            2,
        ),
        (
            "```json\n[{\"name\": \"read_file\", \"arguments\": {}}, {\"name\": \"glob\", \"arguments\": {}}]\n```",
            2,
        ),
        // Seen from Qwen2.5-Coder 1.5B on llama.cpp: a template's escaped braces around it.
        (
            "{{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.py\"}}}}",
            1,
        ),
        // One object per line, the same call written again: two calls, each once.
        (
            "{\"name\": \"glob\", \"arguments\": {\"pattern\": \"a\"}}\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"b\"}}\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"a\"}}\n",
            2,
        ),
    ];
    for (text, n) in cases {
        assert_eq!(names(text).len(), n, "{text}");
    }
}

#[test]
fn the_text_that_carried_a_call_leaves_the_answer() {
    let found = extract(
        "Let me look.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}\n</tool_call>\nThen I answer.",
        &offered(),
    )
    .unwrap();
    assert_eq!(found.rest, "Let me look.\nThen I answer.");
    assert_eq!(
        found.calls[0].arguments,
        json!({"path": "a.txt"}).as_object().cloned().unwrap()
    );
}

#[test]
fn hostile_or_doubtful_text_stays_text() {
    let cases = [
        // A tool that is not offered, alone or next to an offered one.
        "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf /\"}}</tool_call>",
        "```json\n[{\"name\": \"read_file\", \"arguments\": {}}, {\"name\": \"write_file\", \"arguments\": {}}]\n```",
        // Malformed JSON, arguments that are not an object, extra or missing keys.
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": }</tool_call>",
        "```json\n{\"name\": \"read_file\", \"arguments\": [1]}\n```",
        "{\"name\": \"read_file\", \"arguments\": {}, \"then\": \"bash\"}",
        "{\"name\": \"read_file\"}",
        "{\"name\": \"read_file\", \"arguments\": {}, \"parameters\": {}}",
        // Quoted: an example, a blockquote, inline code, an indented block, prose around bare JSON.
        "For example:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```",
        "A call looks like this:\n<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>",
        "> ```json\n> {\"name\": \"read_file\", \"arguments\": {}}\n> ```",
        "Write `{\"name\": \"read_file\", \"arguments\": {}}` to call it.",
        "    <tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>",
        "The answer is {\"name\": \"read_file\", \"arguments\": {}} as JSON.",
        // Bare JSON with prose after it, or braces and nothing in them.
        "{\"name\": \"read_file\", \"arguments\": {}}\nThen I will delete it.",
        "{{{{ }}}}",
        "{\"name\": \"read_file\", \"arguments\": {}} x }",
        // An unclosed fence is prose that was cut, not a call.
        "```json\n{\"name\": \"read_file\", \"arguments\": {}}",
    ];
    for text in cases {
        assert_eq!(extract(text, &offered()), None, "{text}");
    }
    // The control: the boundary is the offer. The same call is taken when its tool is offered.
    let bash =
        "<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"rm -rf /\"}}</tool_call>";
    assert_eq!(names(bash), Vec::<String>::new());
    assert_eq!(extract(bash, &["bash".to_owned()]).unwrap().calls.len(), 1);
    assert_eq!(
        extract(bash, &[]),
        None,
        "no tools offered: nothing is a call"
    );
}

#[test]
fn huge_text_is_bounded_in_time_and_in_calls() {
    let call = "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>\n";
    let cases = [
        "```json\n".repeat(100_000),
        "<tool_call>\n".repeat(80_000),
        "\n".repeat(1 << 19) + "```\n",
        call.repeat(1_000),
        "x".repeat(MAX_TEXT + 1) + "\n" + call,
    ];
    for text in &cases {
        let started = Instant::now();
        let found = extract(text, &offered());
        assert!(found.is_none_or(|f| f.calls.len() <= MAX_CALLS));
        assert!(started.elapsed().as_secs() < 2, "{} bytes", text.len());
    }
    let distinct: String = (0..1_000)
        .map(|i| {
            format!("<tool_call>{{\"name\": \"read_file\", \"arguments\": {{\"path\": \"{i}\"}}}}</tool_call>\n")
        })
        .collect();
    assert_eq!(names(&distinct).len(), MAX_CALLS);
    assert_eq!(names(&call.repeat(1_000)).len(), 1, "the same call, once");
}
