//! The Converse bodies of every case of [`crate::wire_cases`], byte for byte as the builder made them
//! before its request types were typed.

use super::*;
use crate::wire_cases::{assert_bodies, cases};

#[test]
fn every_case_serializes_to_the_captured_body() {
    let mut got = Vec::new();
    for (variant, model) in [
        ("claude", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
        ("nova", "amazon.nova-pro-v1:0"),
        ("other", "meta.llama3-70b-instruct-v1:0"),
    ] {
        for case in cases("bedrock") {
            let body = case.with_request(|r| {
                let wire = build_request(model, "bedrock", r, &case.options);
                serde_json::to_string(&wire).unwrap()
            });
            got.push((format!("{variant}/{}", case.name), body));
        }
    }
    assert_bodies(&got, EXPECTED);
}

const EXPECTED: &[(&str, &str)] = &[
    (
        "claude/empty",
        r#"{"messages":[],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/text",
        r#"{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"text":"hello"}]},{"role":"user","content":[{"text":"again"}]}],"system":[{"text":"Be brief."}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/thinking_ours",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/thinking_foreign",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/tools",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"system":[{"text":"sys"}],"inferenceConfig":{"maxTokens":8192},"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "claude/tool_choice_none_parallel_off",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"inferenceConfig":{"maxTokens":8192},"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "claude/parallel_on_off",
        r#"{"messages":[{"role":"user","content":[{"text":"go"}]}],"inferenceConfig":{"maxTokens":8192},"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "claude/call_without_text",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"grep","input":{"pattern":"y"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":""}]}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/options",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}],"inferenceConfig":{"maxTokens":4096,"temperature":0.3},"additionalModelRequestFields":{"thinking":{"budget_tokens":2048,"type":"enabled"}}}"#,
    ),
    (
        "claude/effort_low",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}],"inferenceConfig":{"maxTokens":9216},"additionalModelRequestFields":{"thinking":{"budget_tokens":1024,"type":"enabled"}}}"#,
    ),
    (
        "claude/cache_1h",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"},{"cachePoint":{"type":"default","ttl":"1h"}}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"},{"cachePoint":{"type":"default","ttl":"1h"}}]}],"system":[{"text":"sys"},{"cachePoint":{"type":"default","ttl":"1h"}}],"inferenceConfig":{"maxTokens":8192},"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}},{"cachePoint":{"type":"default","ttl":"1h"}}]}}"#,
    ),
    (
        "claude/cache_5m_thinking_last",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}},{"cachePoint":{"type":"default"}}]}],"system":[{"text":"sys"},{"cachePoint":{"type":"default"}}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/cache_no_system",
        r#"{"messages":[{"role":"user","content":[{"text":"q"},{"cachePoint":{"type":"default"}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/attachments",
        r#"{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}},{"document":{"format":"pdf","name":"spec v2","source":{"bytes":"JVBERi0xLjcKJSVFT0YK"}}},{"text":"what do these show?"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"text":"a diagram and a spec"}]},{"role":"user","content":[{"text":"and the spec's version?"},{"cachePoint":{"type":"default"}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/image_result",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.png"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"toolu_7","name":"read_file","input":{"path":"a.png"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_7","content":[{"text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}}]}}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    (
        "claude/output_schema",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}],"inferenceConfig":{"maxTokens":8192}}"#,
    ),
    ("nova/empty", r#"{"messages":[]}"#),
    (
        "nova/text",
        r#"{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"text":"hello"}]},{"role":"user","content":[{"text":"again"}]}],"system":[{"text":"Be brief."}]}"#,
    ),
    (
        "nova/thinking_ours",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}]}"#,
    ),
    (
        "nova/thinking_foreign",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}]}"#,
    ),
    (
        "nova/tools",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"system":[{"text":"sys"}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "nova/tool_choice_none_parallel_off",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "nova/parallel_on_off",
        r#"{"messages":[{"role":"user","content":[{"text":"go"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "nova/call_without_text",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"grep","input":{"pattern":"y"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":""}]}}]}]}"#,
    ),
    (
        "nova/options",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}],"inferenceConfig":{"maxTokens":4096,"temperature":0.3}}"#,
    ),
    (
        "nova/effort_low",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}]}"#,
    ),
    (
        "nova/cache_1h",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"},{"cachePoint":{"type":"default","ttl":"1h"}}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"},{"cachePoint":{"type":"default","ttl":"1h"}}]}],"system":[{"text":"sys"},{"cachePoint":{"type":"default","ttl":"1h"}}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "nova/cache_5m_thinking_last",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}},{"cachePoint":{"type":"default"}}]}],"system":[{"text":"sys"},{"cachePoint":{"type":"default"}}]}"#,
    ),
    (
        "nova/cache_no_system",
        r#"{"messages":[{"role":"user","content":[{"text":"q"},{"cachePoint":{"type":"default"}}]}]}"#,
    ),
    (
        "nova/attachments",
        r#"{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}},{"document":{"format":"pdf","name":"spec v2","source":{"bytes":"JVBERi0xLjcKJSVFT0YK"}}},{"text":"what do these show?"},{"cachePoint":{"type":"default"}}]},{"role":"assistant","content":[{"text":"a diagram and a spec"}]},{"role":"user","content":[{"text":"and the spec's version?"},{"cachePoint":{"type":"default"}}]}]}"#,
    ),
    (
        "nova/image_result",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.png"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"toolu_7","name":"read_file","input":{"path":"a.png"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_7","content":[{"text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}}]}}]}]}"#,
    ),
    (
        "nova/output_schema",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}]}"#,
    ),
    ("other/empty", r#"{"messages":[]}"#),
    (
        "other/text",
        r#"{"messages":[{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"text":"hello"}]},{"role":"user","content":[{"text":"again"}]}],"system":[{"text":"Be brief."}]}"#,
    ),
    (
        "other/thinking_ours",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}]}"#,
    ),
    (
        "other/thinking_foreign",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_9","content":[{"text":"x found"}]}}]}]}"#,
    ),
    (
        "other/tools",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"system":[{"text":"sys"}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "other/tool_choice_none_parallel_off",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "other/parallel_on_off",
        r#"{"messages":[{"role":"user","content":[{"text":"go"}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "other/call_without_text",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"grep","input":{"pattern":"y"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":""}]}}]}]}"#,
    ),
    (
        "other/options",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}],"inferenceConfig":{"maxTokens":4096,"temperature":0.3}}"#,
    ),
    (
        "other/effort_low",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}]}"#,
    ),
    (
        "other/cache_1h",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.rs"}]},{"role":"assistant","content":[{"text":"Reading."},{"toolUse":{"toolUseId":"toolu_1","name":"read_file","input":{"path":"a.rs"}}},{"toolUse":{"toolUseId":"call_rounds_1","name":"grep","input":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"fn main() {}"}]}},{"toolResult":{"toolUseId":"call_rounds_1","content":[{"text":"not allowed"}],"status":"error"}},{"text":"and then?"}]}],"system":[{"text":"sys"}],"toolConfig":{"tools":[{"toolSpec":{"name":"read_file","description":"The read_file tool.","inputSchema":{"json":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}}}},{"toolSpec":{"name":"grep","description":"The grep tool.","inputSchema":{"json":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}}}]}}"#,
    ),
    (
        "other/cache_5m_thinking_last",
        r#"{"messages":[{"role":"user","content":[{"text":"think"}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hmm","signature":"sig-1"}}},{"reasoningContent":{"redactedContent":"opaque"}},{"text":"answer"},{"toolUse":{"toolUseId":"toolu_9","name":"grep","input":{"pattern":"x"}}}]}],"system":[{"text":"sys"}]}"#,
    ),
    (
        "other/cache_no_system",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}]}"#,
    ),
    (
        "other/attachments",
        r#"{"messages":[{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}},{"document":{"format":"pdf","name":"spec v2","source":{"bytes":"JVBERi0xLjcKJSVFT0YK"}}},{"text":"what do these show?"}]},{"role":"assistant","content":[{"text":"a diagram and a spec"}]},{"role":"user","content":[{"text":"and the spec's version?"}]}]}"#,
    ),
    (
        "other/image_result",
        r#"{"messages":[{"role":"user","content":[{"text":"look at a.png"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"toolu_7","name":"read_file","input":{"path":"a.png"}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_7","content":[{"text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}}]}}]}]}"#,
    ),
    (
        "other/output_schema",
        r#"{"messages":[{"role":"user","content":[{"text":"q"}]}]}"#,
    ),
];

#[test]
fn a_documents_name_is_what_converse_accepts_and_unique_in_its_message() {
    let mut named = Vec::new();
    for (file, want) in [
        ("spec v2.pdf", "spec v2"),
        ("spec v2.pdf", "spec v2 (2)"),
        ("my_report.final.pdf", "my report final"),
        ("  weird$$name  .pdf", "weird name"),
        ("(draft) [1]-x.pdf", "(draft) [1]-x"),
        ("日本.pdf", "document"),
        (".pdf", "document (2)"),
    ] {
        let name = super::request::document_name(file, &named);
        assert_eq!(name, want, "{file}");
        named.push(name);
    }
}
