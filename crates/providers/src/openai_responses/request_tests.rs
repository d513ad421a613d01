//! The Responses bodies of every case of [`crate::wire_cases`], byte for byte as the builder made them
//! before its request types were typed.

use super::*;
use crate::openai::Flavor;
use crate::wire_cases::{assert_bodies, cases};

#[test]
fn every_case_serializes_to_the_captured_body() {
    let mut got = Vec::new();
    for (variant, model, provider, flavor) in [
        ("reasoning", "o3", "openai", Flavor::OpenAi),
        ("chat_model", "gpt-4.1", "openai-responses", Flavor::OpenAi),
        ("compatible", "local", "local", Flavor::Compatible),
    ] {
        for case in cases("openai") {
            let body = case.with_request(|r| {
                let wire = build_request(model, provider, flavor, r, &case.options);
                serde_json::to_string(&wire).unwrap()
            });
            got.push((format!("{variant}/{}", case.name), body));
        }
    }
    assert_bodies(&got, EXPECTED);
}

const EXPECTED: &[(&str, &str)] = &[
    (
        "reasoning/empty",
        r#"{"model":"o3","stream":true,"store":false,"input":[],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/text",
        r#"{"model":"o3","stream":true,"store":false,"instructions":"Be brief.","input":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"assistant","content":"hello"},{"type":"message","role":"user","content":"again"}],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/thinking_ours",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}],"encrypted_content":"enc"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/thinking_foreign",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/tools",
        r#"{"model":"o3","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":true,"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/tool_choice_none_parallel_off",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"tool_choice":"none","parallel_tool_calls":false,"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/parallel_on_off",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"go"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":false,"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/call_without_text",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"grep","arguments":"{\"pattern\":\"y\"}"},{"type":"function_call_output","call_id":"c1","output":""}],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/options",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"reasoning":{"effort":"high"},"max_output_tokens":4096,"temperature":0.3}"#,
    ),
    (
        "reasoning/effort_low",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"reasoning":{"effort":"low"}}"#,
    ),
    (
        "reasoning/cache_1h",
        r#"{"model":"o3","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":true,"include":["reasoning.encrypted_content"],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "reasoning/cache_5m_thinking_last",
        r#"{"model":"o3","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"think"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}],"encrypted_content":"enc"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"}],"include":["reasoning.encrypted_content"],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "reasoning/cache_no_system",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "reasoning/attachments",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="},{"type":"input_file","filename":"spec v2.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjcKJSVFT0YK"},{"type":"input_text","text":"what do these show?"}]},{"type":"message","role":"assistant","content":"a diagram and a spec"},{"type":"message","role":"user","content":"and the spec's version?"}],"include":["reasoning.encrypted_content"],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "reasoning/image_result",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.png"},{"type":"function_call","call_id":"toolu_7","name":"read_file","arguments":"{\"path\":\"a.png\"}"},{"type":"function_call_output","call_id":"toolu_7","output":[{"type":"input_text","text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}]}],"include":["reasoning.encrypted_content"]}"#,
    ),
    (
        "reasoning/output_schema",
        r#"{"model":"o3","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"text":{"format":{"name":"final_answer","schema":{"properties":{"ok":{"type":"boolean"}},"type":"object"},"strict":false,"type":"json_schema"}}}"#,
    ),
    (
        "chat_model/empty",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[]}"#,
    ),
    (
        "chat_model/text",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"instructions":"Be brief.","input":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"assistant","content":"hello"},{"type":"message","role":"user","content":"again"}]}"#,
    ),
    (
        "chat_model/thinking_ours",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}],"encrypted_content":"enc"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}]}"#,
    ),
    (
        "chat_model/thinking_foreign",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}]}"#,
    ),
    (
        "chat_model/tools",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":true}"#,
    ),
    (
        "chat_model/tool_choice_none_parallel_off",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"tool_choice":"none","parallel_tool_calls":false}"#,
    ),
    (
        "chat_model/parallel_on_off",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"go"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":false}"#,
    ),
    (
        "chat_model/call_without_text",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"grep","arguments":"{\"pattern\":\"y\"}"},{"type":"function_call_output","call_id":"c1","output":""}]}"#,
    ),
    (
        "chat_model/options",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"reasoning":{"effort":"high"},"max_output_tokens":4096,"temperature":0.3}"#,
    ),
    (
        "chat_model/effort_low",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"include":["reasoning.encrypted_content"],"reasoning":{"effort":"low"}}"#,
    ),
    (
        "chat_model/cache_1h",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":true,"prompt_cache_key":"run-1"}"#,
    ),
    (
        "chat_model/cache_5m_thinking_last",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"think"},{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"first"},{"type":"summary_text","text":"second"}],"encrypted_content":"enc"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "chat_model/cache_no_system",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "chat_model/attachments",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="},{"type":"input_file","filename":"spec v2.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjcKJSVFT0YK"},{"type":"input_text","text":"what do these show?"}]},{"type":"message","role":"assistant","content":"a diagram and a spec"},{"type":"message","role":"user","content":"and the spec's version?"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "chat_model/image_result",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.png"},{"type":"function_call","call_id":"toolu_7","name":"read_file","arguments":"{\"path\":\"a.png\"}"},{"type":"function_call_output","call_id":"toolu_7","output":[{"type":"input_text","text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}]}]}"#,
    ),
    (
        "chat_model/output_schema",
        r#"{"model":"gpt-4.1","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"text":{"format":{"name":"final_answer","schema":{"properties":{"ok":{"type":"boolean"}},"type":"object"},"strict":false,"type":"json_schema"}}}"#,
    ),
    (
        "compatible/empty",
        r#"{"model":"local","stream":true,"store":false,"input":[]}"#,
    ),
    (
        "compatible/text",
        r#"{"model":"local","stream":true,"store":false,"instructions":"Be brief.","input":[{"type":"message","role":"user","content":"hi"},{"type":"message","role":"assistant","content":"hello"},{"type":"message","role":"user","content":"again"}]}"#,
    ),
    (
        "compatible/thinking_ours",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}]}"#,
    ),
    (
        "compatible/thinking_foreign",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"think"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"},{"type":"function_call_output","call_id":"toolu_9","output":"x found"}]}"#,
    ),
    (
        "compatible/tools",
        r#"{"model":"local","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}]}"#,
    ),
    (
        "compatible/tool_choice_none_parallel_off",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"tool_choice":"none","parallel_tool_calls":false}"#,
    ),
    (
        "compatible/parallel_on_off",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"go"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"parallel_tool_calls":false}"#,
    ),
    (
        "compatible/call_without_text",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"},{"type":"function_call","call_id":"c1","name":"grep","arguments":"{\"pattern\":\"y\"}"},{"type":"function_call_output","call_id":"c1","output":""}]}"#,
    ),
    (
        "compatible/options",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"reasoning":{"effort":"high"},"max_output_tokens":4096,"temperature":0.3}"#,
    ),
    (
        "compatible/effort_low",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"reasoning":{"effort":"low"}}"#,
    ),
    (
        "compatible/cache_1h",
        r#"{"model":"local","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"look at a.rs"},{"type":"message","role":"assistant","content":"Reading."},{"type":"function_call","call_id":"toolu_1","name":"read_file","arguments":"{\"path\":\"a.rs\"}"},{"type":"function_call","call_id":"call_rounds_1","name":"grep","arguments":"{ \"pattern\": \"fn main\", \"limit\": 2 }"},{"type":"function_call_output","call_id":"toolu_1","output":"fn main() {}"},{"type":"function_call_output","call_id":"call_rounds_1","output":"Error: not allowed"},{"type":"message","role":"user","content":"and then?"}],"tools":[{"type":"function","name":"read_file","description":"The read_file tool.","parameters":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"},"strict":false},{"type":"function","name":"grep","description":"The grep tool.","parameters":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"strict":false}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "compatible/cache_5m_thinking_last",
        r#"{"model":"local","stream":true,"store":false,"instructions":"sys","input":[{"type":"message","role":"user","content":"think"},{"type":"message","role":"assistant","content":"answer"},{"type":"function_call","call_id":"toolu_9","name":"grep","arguments":"{\"pattern\":\"x\"}"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "compatible/cache_no_system",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "compatible/attachments",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":[{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="},{"type":"input_file","filename":"spec v2.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjcKJSVFT0YK"},{"type":"input_text","text":"what do these show?"}]},{"type":"message","role":"assistant","content":"a diagram and a spec"},{"type":"message","role":"user","content":"and the spec's version?"}],"prompt_cache_key":"run-1"}"#,
    ),
    (
        "compatible/image_result",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"look at a.png"},{"type":"function_call","call_id":"toolu_7","name":"read_file","arguments":"{\"path\":\"a.png\"}"},{"type":"function_call_output","call_id":"toolu_7","output":[{"type":"input_text","text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"type":"input_image","detail":"auto","image_url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}]}]}"#,
    ),
    (
        "compatible/output_schema",
        r#"{"model":"local","stream":true,"store":false,"input":[{"type":"message","role":"user","content":"q"}],"text":{"format":{"name":"final_answer","schema":{"properties":{"ok":{"type":"boolean"}},"type":"object"},"strict":false,"type":"json_schema"}}}"#,
    ),
];
