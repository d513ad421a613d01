//! The Gemini bodies of every case of [`crate::wire_cases`], byte for byte as the builder made them
//! before its request types were typed.

use super::*;
use crate::wire_cases::{assert_bodies, cases};

#[test]
fn every_case_serializes_to_the_captured_body() {
    let mut got = Vec::new();
    for (variant, model, own) in [
        ("gemini_2_5", "gemini-2.5-flash", "gemini"),
        ("gemini_3", "gemini-3-pro-preview", "gemini"),
        ("vertex", "gemini-2.5-pro", "vertex"),
    ] {
        for case in cases(own) {
            let body = case.with_request(|r| {
                serde_json::to_string(&build_body(model, own, r, &case.options)).unwrap()
            });
            got.push((format!("{variant}/{}", case.name), body));
        }
    }
    assert_bodies(&got, EXPECTED);
}

const EXPECTED: &[(&str, &str)] = &[
    ("gemini_2_5/empty", r#"{"contents":[]}"#),
    (
        "gemini_2_5/text",
        r#"{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"again"}]}]}"#,
    ),
    (
        "gemini_2_5/thinking_ours",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_9","name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "gemini_2_5/thinking_foreign",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"answer"},{"functionCall":{"name":"grep","args":{"pattern":"x"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "gemini_2_5/tools",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_2_5/tool_choice_none_parallel_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"name":"read_file","args":{"path":"a.rs"}}},{"functionCall":{"name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}"#,
    ),
    (
        "gemini_2_5/parallel_on_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_2_5/call_without_text",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"grep","args":{"pattern":"y"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"grep","response":{"output":""}}}]}]}"#,
    ),
    (
        "gemini_2_5/options",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"maxOutputTokens":4096,"temperature":0.3,"thinkingConfig":{"thinkingBudget":2048}}}"#,
    ),
    (
        "gemini_2_5/effort_low",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":1024}}}"#,
    ),
    (
        "gemini_2_5/cache_1h",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_2_5/cache_5m_thinking_last",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}}}]}]}"#,
    ),
    (
        "gemini_2_5/cache_no_system",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
    (
        "gemini_2_5/attachments",
        r#"{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjcKJSVFT0YK"}},{"text":"what do these show?"}]},{"role":"model","parts":[{"text":"a diagram and a spec"}]},{"role":"user","parts":[{"text":"and the spec's version?"}]}]}"#,
    ),
    (
        "gemini_2_5/image_result",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.png"}]},{"role":"model","parts":[{"functionCall":{"id":"toolu_7","name":"read_file","args":{"path":"a.png"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_7","name":"read_file","response":{"output":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"}}},{"text":"The images the tool results above refer to:"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}]}]}"#,
    ),
    (
        "gemini_2_5/output_schema",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
    ("gemini_3/empty", r#"{"contents":[]}"#),
    (
        "gemini_3/text",
        r#"{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"again"}]}]}"#,
    ),
    (
        "gemini_3/thinking_ours",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_9","name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "gemini_3/thinking_foreign",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"answer"},{"functionCall":{"name":"grep","args":{"pattern":"x"}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "gemini_3/tools",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_3/tool_choice_none_parallel_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"skip_thought_signature_validator"},{"functionCall":{"name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}"#,
    ),
    (
        "gemini_3/parallel_on_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_3/call_without_text",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"grep","args":{"pattern":"y"}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"grep","response":{"output":""}}}]}]}"#,
    ),
    (
        "gemini_3/options",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"maxOutputTokens":4096,"temperature":0.3,"thinkingConfig":{"thinkingBudget":2048}}}"#,
    ),
    (
        "gemini_3/effort_low",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"thinkingConfig":{"thinkingLevel":"LOW"}}}"#,
    ),
    (
        "gemini_3/cache_1h",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "gemini_3/cache_5m_thinking_last",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}},"thoughtSignature":"skip_thought_signature_validator"}]}]}"#,
    ),
    (
        "gemini_3/cache_no_system",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
    (
        "gemini_3/attachments",
        r#"{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjcKJSVFT0YK"}},{"text":"what do these show?"}]},{"role":"model","parts":[{"text":"a diagram and a spec"}]},{"role":"user","parts":[{"text":"and the spec's version?"}]}]}"#,
    ),
    (
        "gemini_3/image_result",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.png"}]},{"role":"model","parts":[{"functionCall":{"id":"toolu_7","name":"read_file","args":{"path":"a.png"}},"thoughtSignature":"skip_thought_signature_validator"}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_7","name":"read_file","response":{"output":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"}}},{"text":"The images the tool results above refer to:"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}]}]}"#,
    ),
    (
        "gemini_3/output_schema",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
    ("vertex/empty", r#"{"contents":[]}"#),
    (
        "vertex/text",
        r#"{"systemInstruction":{"parts":[{"text":"Be brief."}]},"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"hello"}]},{"role":"user","parts":[{"text":"again"}]}]}"#,
    ),
    (
        "vertex/thinking_ours",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_9","name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "vertex/thinking_foreign",
        r#"{"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"answer"},{"functionCall":{"name":"grep","args":{"pattern":"x"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"grep","response":{"output":"x found"}}}]}]}"#,
    ),
    (
        "vertex/tools",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "vertex/tool_choice_none_parallel_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"name":"read_file","args":{"path":"a.rs"}}},{"functionCall":{"name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}"#,
    ),
    (
        "vertex/parallel_on_off",
        r#"{"contents":[{"role":"user","parts":[{"text":"go"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "vertex/call_without_text",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"functionCall":{"id":"c1","name":"grep","args":{"pattern":"y"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"grep","response":{"output":""}}}]}]}"#,
    ),
    (
        "vertex/options",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"maxOutputTokens":4096,"temperature":0.3,"thinkingConfig":{"thinkingBudget":2048}}}"#,
    ),
    (
        "vertex/effort_low",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}],"generationConfig":{"thinkingConfig":{"thinkingBudget":1024}}}"#,
    ),
    (
        "vertex/cache_1h",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"look at a.rs"}]},{"role":"model","parts":[{"text":"Reading."},{"functionCall":{"id":"toolu_1","name":"read_file","args":{"path":"a.rs"}},"thoughtSignature":"call-sig"},{"functionCall":{"id":"call_rounds_1","name":"grep","args":{"limit":2,"pattern":"fn main"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_1","name":"read_file","response":{"output":"fn main() {}"}}},{"functionResponse":{"id":"call_rounds_1","name":"grep","response":{"error":"not allowed"}}},{"text":"and then?"}]}],"tools":[{"functionDeclarations":[{"name":"read_file","description":"The read_file tool.","parametersJsonSchema":{"additionalProperties":false,"properties":{"path":{"type":"string"}},"required":["path"],"type":"object"}},{"name":"grep","description":"The grep tool.","parametersJsonSchema":{"properties":{"limit":{"minimum":1,"type":"integer"},"pattern":{"type":"string"}},"required":["pattern"],"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}}}"#,
    ),
    (
        "vertex/cache_5m_thinking_last",
        r#"{"systemInstruction":{"parts":[{"text":"sys"}]},"contents":[{"role":"user","parts":[{"text":"think"}]},{"role":"model","parts":[{"text":"hmm","thought":true,"thoughtSignature":"sig-1"},{"text":"answer","thoughtSignature":"text-sig"},{"functionCall":{"id":"toolu_9","name":"grep","args":{"pattern":"x"}}}]}]}"#,
    ),
    (
        "vertex/cache_no_system",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
    (
        "vertex/attachments",
        r#"{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}},{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0xLjcKJSVFT0YK"}},{"text":"what do these show?"}]},{"role":"model","parts":[{"text":"a diagram and a spec"}]},{"role":"user","parts":[{"text":"and the spec's version?"}]}]}"#,
    ),
    (
        "vertex/image_result",
        r#"{"contents":[{"role":"user","parts":[{"text":"look at a.png"}]},{"role":"model","parts":[{"functionCall":{"id":"toolu_7","name":"read_file","args":{"path":"a.png"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"toolu_7","name":"read_file","response":{"output":"image \"a.png\" (image/png, 27 bytes, 1×1 pixels), attached"}}},{"text":"The images the tool results above refer to:"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="}}]}]}"#,
    ),
    (
        "vertex/output_schema",
        r#"{"contents":[{"role":"user","parts":[{"text":"q"}]}]}"#,
    ),
];
