//! The Chat Completions bodies of every case of [`crate::wire_cases`], byte for byte as the builder made them
//! before its request types were typed.

use super::*;
use crate::wire_cases::{assert_bodies, cases};

#[test]
fn every_case_serializes_to_the_captured_body() {
    let mut got = Vec::new();
    for (variant, flavor, model) in [
        ("openai", Flavor::OpenAi, "gpt-4.1"),
        ("compatible", Flavor::Compatible, "qwen3"),
    ] {
        for case in cases("openai") {
            let body = case.with_request(|r| {
                serde_json::to_string(&build_request(model, flavor, r, &case.options)).unwrap()
            });
            got.push((format!("{variant}/{}", case.name), body));
        }
    }
    assert_bodies(&got, EXPECTED);
}

const EXPECTED: &[(&str, &str)] = &[
    (
        "openai/empty",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[]}"#,
    ),
    (
        "openai/text",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"Be brief.","role":"developer"},{"content":"hi","role":"user"},{"content":"hello","role":"assistant"},{"content":"again","role":"user"}]}"#,
    ),
    (
        "openai/thinking_ours",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]},{"content":"x found","role":"tool","tool_call_id":"toolu_9"}]}"#,
    ),
    (
        "openai/thinking_foreign",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]},{"content":"x found","role":"tool","tool_call_id":"toolu_9"}]}"#,
    ),
    (
        "openai/tools",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"parallel_tool_calls":true,"messages":[{"content":"sys","role":"developer"},{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "openai/tool_choice_none_parallel_off",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"tool_choice":"none","parallel_tool_calls":false,"messages":[{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "openai/parallel_on_off",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"parallel_tool_calls":false,"messages":[{"content":"go","role":"user"}]}"#,
    ),
    (
        "openai/call_without_text",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"q","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"y\"}","name":"grep"},"id":"c1","type":"function"}]},{"content":"","role":"tool","tool_call_id":"c1"}]}"#,
    ),
    (
        "openai/options",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":4096,"reasoning_effort":"high","temperature":0.3,"messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "openai/effort_low",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low","messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "openai/cache_1h",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"parallel_tool_calls":true,"prompt_cache_key":"run-1","messages":[{"content":"sys","role":"developer"},{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "openai/cache_5m_thinking_last",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"prompt_cache_key":"run-1","messages":[{"content":"sys","role":"developer"},{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]}]}"#,
    ),
    (
        "openai/cache_no_system",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"prompt_cache_key":"run-1","messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "openai/attachments",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"prompt_cache_key":"run-1","messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjcKJSVFT0YK","filename":"spec v2.pdf"}},{"type":"text","text":"what do these show?"}],"role":"user"},{"content":"a diagram and a spec","role":"assistant"},{"content":"and the spec's version?","role":"user"}]}"#,
    ),
    (
        "openai/image_result",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"look at a.png","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.png\"}","name":"read_file"},"id":"toolu_7","type":"function"}]},{"content":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached","role":"tool","tool_call_id":"toolu_7"},{"content":[{"type":"text","text":"The images the tool results above refer to:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}],"role":"user"}]}"#,
    ),
    (
        "openai/output_schema",
        r#"{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"response_format":{"json_schema":{"name":"final_answer","schema":{"properties":{"ok":{"type":"boolean"}},"type":"object"},"strict":false},"type":"json_schema"},"messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "compatible/empty",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[]}"#,
    ),
    (
        "compatible/text",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"Be brief.","role":"system"},{"content":"hi","role":"user"},{"content":"hello","role":"assistant"},{"content":"again","role":"user"}]}"#,
    ),
    (
        "compatible/thinking_ours",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]},{"content":"x found","role":"tool","tool_call_id":"toolu_9"}]}"#,
    ),
    (
        "compatible/thinking_foreign",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]},{"content":"x found","role":"tool","tool_call_id":"toolu_9"}]}"#,
    ),
    (
        "compatible/tools",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"messages":[{"content":"sys","role":"system"},{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "compatible/tool_choice_none_parallel_off",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"tool_choice":"none","parallel_tool_calls":false,"messages":[{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "compatible/parallel_on_off",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"parallel_tool_calls":false,"messages":[{"content":"go","role":"user"}]}"#,
    ),
    (
        "compatible/call_without_text",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"q","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"y\"}","name":"grep"},"id":"c1","type":"function"}]},{"content":"","role":"tool","tool_call_id":"c1"}]}"#,
    ),
    (
        "compatible/options",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"max_tokens":4096,"reasoning_effort":"high","temperature":0.3,"messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "compatible/effort_low",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low","messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "compatible/cache_1h",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}},{"type":"function","function":{"name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}],"messages":[{"content":"sys","role":"system"},{"content":"look at a.rs","role":"user"},{"content":"Reading.","role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.rs\"}","name":"read_file"},"id":"toolu_1","type":"function"},{"function":{"arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }","name":"grep"},"id":"call_rounds_1","type":"function"}]},{"content":"fn main() {}","role":"tool","tool_call_id":"toolu_1"},{"content":"Error: not allowed","role":"tool","tool_call_id":"call_rounds_1"},{"content":"and then?","role":"user"}]}"#,
    ),
    (
        "compatible/cache_5m_thinking_last",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"sys","role":"system"},{"content":"think","role":"user"},{"content":"answer","role":"assistant","tool_calls":[{"function":{"arguments":"{\"pattern\":\"x\"}","name":"grep"},"id":"toolu_9","type":"function"}]}]}"#,
    ),
    (
        "compatible/cache_no_system",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"q","role":"user"}]}"#,
    ),
    (
        "compatible/attachments",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjcKJSVFT0YK","filename":"spec v2.pdf"}},{"type":"text","text":"what do these show?"}],"role":"user"},{"content":"a diagram and a spec","role":"assistant"},{"content":"and the spec's version?","role":"user"}]}"#,
    ),
    (
        "compatible/image_result",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"look at a.png","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a.png\"}","name":"read_file"},"id":"toolu_7","type":"function"}]},{"content":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached","role":"tool","tool_call_id":"toolu_7"},{"content":[{"type":"text","text":"The images the tool results above refer to:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}],"role":"user"}]}"#,
    ),
    (
        "compatible/output_schema",
        r#"{"model":"qwen3","stream":true,"stream_options":{"include_usage":true},"messages":[{"content":"q","role":"user"}]}"#,
    ),
];
