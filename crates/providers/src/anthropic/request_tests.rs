//! The Messages bodies of every case of [`crate::wire_cases`], byte for byte as the builder made them
//! before its request types were typed.

use super::*;
use crate::wire_cases::{assert_bodies, cases};

#[test]
fn every_case_serializes_to_the_captured_body() {
    let mut got = Vec::new();
    let hosts = [
        (
            "anthropic",
            Host::Anthropic {
                model: "claude-sonnet-4-5",
            },
            "anthropic",
        ),
        ("vertex", Host::Vertex, "vertex"),
    ];
    for (variant, host, own) in hosts {
        for case in cases(own) {
            let body = case.with_request(|r| {
                serde_json::to_string(&build_body(host, own, r, &case.options)).unwrap()
            });
            got.push((format!("{variant}/{}", case.name), body));
        }
    }
    assert_bodies(&got, EXPECTED);
}

const EXPECTED: &[(&str, &str)] = &[
    (
        "anthropic/empty",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[]}"#,
    ),
    (
        "anthropic/text",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"system":"Be brief.","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"text":"hello","type":"text"}]},{"role":"user","content":"again"}]}"#,
    ),
    (
        "anthropic/thinking_ours",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"signature":"sig-1","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"text":"answer","type":"text"},{"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"x found","tool_use_id":"toolu_9","type":"tool_result"}]}]}"#,
    ),
    (
        "anthropic/thinking_foreign",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"text":"answer","type":"text"},{"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"x found","tool_use_id":"toolu_9","type":"tool_result"}]}]}"#,
    ),
    (
        "anthropic/tools",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"system":"sys","tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"look at a.rs"},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "anthropic/tool_choice_none_parallel_off",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"look at a.rs"},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "anthropic/parallel_on_off",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"go"}]}"#,
    ),
    (
        "anthropic/call_without_text",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"id":"c1","input":{"pattern":"y"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"","tool_use_id":"c1","type":"tool_result"}]}]}"#,
    ),
    (
        "anthropic/options",
        r#"{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"thinking":{"budget_tokens":2048,"type":"enabled"},"temperature":0.3,"messages":[{"role":"user","content":"q"}]}"#,
    ),
    (
        "anthropic/effort_low",
        r#"{"model":"claude-sonnet-4-5","max_tokens":9216,"stream":true,"thinking":{"budget_tokens":1024,"type":"enabled"},"messages":[{"role":"user","content":"q"}]}"#,
    ),
    (
        "anthropic/cache_1h",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"system":[{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"sys","type":"text"}],"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"cache_control":{"ttl":"1h","type":"ephemeral"}}],"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":[{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"look at a.rs","type":"text"}]},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "anthropic/cache_5m_thinking_last",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"system":[{"cache_control":{"type":"ephemeral"},"text":"sys","type":"text"}],"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"signature":"sig-1","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"text":"answer","type":"text"},{"cache_control":{"type":"ephemeral"},"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]}]}"#,
    ),
    (
        "anthropic/cache_no_system",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"q","type":"text"}]}]}"#,
    ),
    (
        "anthropic/attachments",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":[{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=","media_type":"image/png","type":"base64"},"type":"image"},{"source":{"data":"JVBERi0xLjcKJSVFT0YK","media_type":"application/pdf","type":"base64"},"type":"document"},{"cache_control":{"type":"ephemeral"},"text":"what do these show?","type":"text"}]},{"role":"assistant","content":[{"text":"a diagram and a spec","type":"text"}]},{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"and the spec's version?","type":"text"}]}]}"#,
    ),
    (
        "anthropic/image_result",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"look at a.png"},{"role":"assistant","content":[{"id":"toolu_7","input":{"path":"a.png"},"name":"read_file","type":"tool_use"}]},{"role":"user","content":[{"content":[{"text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached","type":"text"},{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=","media_type":"image/png","type":"base64"},"type":"image"}],"tool_use_id":"toolu_7","type":"tool_result"}]}]}"#,
    ),
    (
        "anthropic/output_schema",
        r#"{"model":"claude-sonnet-4-5","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"q"}]}"#,
    ),
    (
        "vertex/empty",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[]}"#,
    ),
    (
        "vertex/text",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"system":"Be brief.","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"text":"hello","type":"text"}]},{"role":"user","content":"again"}]}"#,
    ),
    (
        "vertex/thinking_ours",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"signature":"sig-1","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"text":"answer","type":"text"},{"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"x found","tool_use_id":"toolu_9","type":"tool_result"}]}]}"#,
    ),
    (
        "vertex/thinking_foreign",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"text":"answer","type":"text"},{"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"x found","tool_use_id":"toolu_9","type":"tool_result"}]}]}"#,
    ),
    (
        "vertex/tools",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"system":"sys","tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":"look at a.rs"},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "vertex/tool_choice_none_parallel_off",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"look at a.rs"},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "vertex/parallel_on_off",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"messages":[{"role":"user","content":"go"}]}"#,
    ),
    (
        "vertex/call_without_text",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"id":"c1","input":{"pattern":"y"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"","tool_use_id":"c1","type":"tool_result"}]}]}"#,
    ),
    (
        "vertex/options",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":4096,"stream":true,"thinking":{"budget_tokens":2048,"type":"enabled"},"temperature":0.3,"messages":[{"role":"user","content":"q"}]}"#,
    ),
    (
        "vertex/effort_low",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":9216,"stream":true,"thinking":{"budget_tokens":1024,"type":"enabled"},"messages":[{"role":"user","content":"q"}]}"#,
    ),
    (
        "vertex/cache_1h",
        r#"{"anthropic_version":"vertex-2023-10-16","anthropic_beta":["extended-cache-ttl-2025-04-11"],"max_tokens":8192,"stream":true,"system":[{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"sys","type":"text"}],"tools":[{"name":"read_file","description":"The read_file tool.","input_schema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","input_schema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"},"cache_control":{"ttl":"1h","type":"ephemeral"}}],"tool_choice":{"type":"auto"},"messages":[{"role":"user","content":[{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"look at a.rs","type":"text"}]},{"role":"assistant","content":[{"text":"Reading.","type":"text"},{"id":"toolu_1","input":{"path":"a.rs"},"name":"read_file","type":"tool_use"},{"id":"call_rounds_1","input":{"limit":2,"pattern":"fn main"},"name":"grep","type":"tool_use"}]},{"role":"user","content":[{"content":"fn main() {}","tool_use_id":"toolu_1","type":"tool_result"},{"content":"not allowed","is_error":true,"tool_use_id":"call_rounds_1","type":"tool_result"},{"cache_control":{"ttl":"1h","type":"ephemeral"},"text":"and then?","type":"text"}]}]}"#,
    ),
    (
        "vertex/cache_5m_thinking_last",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"system":[{"cache_control":{"type":"ephemeral"},"text":"sys","type":"text"}],"messages":[{"role":"user","content":"think"},{"role":"assistant","content":[{"signature":"sig-1","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"text":"answer","type":"text"},{"cache_control":{"type":"ephemeral"},"id":"toolu_9","input":{"pattern":"x"},"name":"grep","type":"tool_use"}]}]}"#,
    ),
    (
        "vertex/cache_no_system",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"q","type":"text"}]}]}"#,
    ),
    (
        "vertex/attachments",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":[{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=","media_type":"image/png","type":"base64"},"type":"image"},{"source":{"data":"JVBERi0xLjcKJSVFT0YK","media_type":"application/pdf","type":"base64"},"type":"document"},{"cache_control":{"type":"ephemeral"},"text":"what do these show?","type":"text"}]},{"role":"assistant","content":[{"text":"a diagram and a spec","type":"text"}]},{"role":"user","content":[{"cache_control":{"type":"ephemeral"},"text":"and the spec's version?","type":"text"}]}]}"#,
    ),
    (
        "vertex/image_result",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"look at a.png"},{"role":"assistant","content":[{"id":"toolu_7","input":{"path":"a.png"},"name":"read_file","type":"tool_use"}]},{"role":"user","content":[{"content":[{"text":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached","type":"text"},{"source":{"data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=","media_type":"image/png","type":"base64"},"type":"image"}],"tool_use_id":"toolu_7","type":"tool_result"}]}]}"#,
    ),
    (
        "vertex/output_schema",
        r#"{"anthropic_version":"vertex-2023-10-16","max_tokens":8192,"stream":true,"messages":[{"role":"user","content":"q"}]}"#,
    ),
];
