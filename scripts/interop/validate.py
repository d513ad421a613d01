#!/usr/bin/env python3
"""Checks the request bodies rounds' wire builders make against the official SDKs' own types.

    ROUNDS_INTEROP_OUT=DIR cargo test -p rounds-providers --lib interop_tests
    python validate.py DIR          # one line per body; exits 1 if any fails
    python validate.py --self-test  # shows each check rejects a body known to be wrong

DIR holds WIRE__VARIANT__CASE.json files (crates/providers/src/interop_tests.rs writes them).
What each wire is checked with:

- anthropic: anthropic.types.message_create_params.MessageCreateParamsStreaming (a TypedDict).
  The Vertex variant has `anthropic_version` and no `model`: both are adjusted (the version
  dropped, a model added) and the rest is checked against the same type.
- openai: openai.types.chat.completion_create_params.CompletionCreateParamsStreaming.
- openai_responses: openai.types.responses.response_create_params.ResponseCreateParamsStreaming.
- gemini: google-genai's pydantic models, which take the REST API's camelCase names (and,
  like the API's JSON parser, the snake_case ones): each of `contents` and
  `systemInstruction` as types.Content, each of `tools` as types.Tool, `toolConfig` as
  types.ToolConfig, `generationConfig` as types.GenerationConfig; a top-level key that is not
  a field of the generateContent request (`gemini_top`) is an error. The models forbid
  unknown keys themselves (their config has extra='forbid'); they are validated from JSON,
  strictly, so a bytes field (inlineData.data, thoughtSignature) must be valid base64.
- bedrock: botocore's ParamValidator on ConverseStream's input shape (modelId added; it goes in
  the URL). Blob fields are base64 in the JSON and must decode; botocore does not check enums,
  so a string outside its shape's enum is reported here.

How the TypedDicts are made strict (pydantic's defaults would let most mistakes through):
- Unknown keys: pydantic ignores them in a TypedDict, and TypeAdapter refuses a config for one
  (a config set on a wrapper would not reach TypedDicts that have their own, as the SDKs'
  file-input ones do). So `forbid_extras` merges extra='forbid' into the __pydantic_config__
  of every TypedDict reachable from the request type, and `dropped` then checks that no key of
  the body went missing in validation. Validation is strict (no "1" for 1).
- Laziness: pydantic validates a field typed Iterable[...] (messages, content, tools, ...) only
  when it is iterated, so `force` walks the result and drains every such iterator.
- Response models in unions: some param unions also admit the SDK's response models (pydantic
  BaseModels whose config allows extra keys); `force` rejects any matched model that kept
  unknown keys.
"""

import argparse
import base64
import binascii
import collections.abc
import copy
import fnmatch
import functools
import json
import sys
import tempfile
from pathlib import Path

import pydantic
import typing_extensions
from pydantic import BaseModel, TypeAdapter

WIRES = ("anthropic", "openai", "openai_responses", "gemini", "bedrock")

# Bodies known to fail a check: a glob of file names, the text every error of each such file
# must contain, and why the failure is accepted for now. A listed file that passes, fails
# otherwise, or a glob that matches no file, fails the run, so the list stays exact.
KNOWN_FAILURES: dict[str, tuple[str, str]] = {
    # anthropic 1.0.0 dropped temperature (top_p, top_k) from the Messages params: deprecated
    # by the API, refused by the newest models ("temperature is deprecated for this model"),
    # still honoured by older ones. rounds sends it when --temperature is given.
    "anthropic__*__options.json": (
        "temperature: Extra inputs are not permitted",
        "temperature is deprecated in the Messages API",
    ),
    # rounds sends Vertex's betas in the body (`anthropic_beta`) as Vertex takes them; the
    # first-party type has no such field (Anthropic's API takes the anthropic-beta header).
    "anthropic__vertex__cache_1h.json": (
        "anthropic_beta: Extra inputs are not permitted",
        "a Vertex-only body field the first-party type cannot judge",
    ),
    # The shared cases sign a Gemini thought with "sig-1", which is not base64; real
    # signatures are the API's own base64, echoed unchanged.
    "gemini__*__thinking_ours.json": (
        "thoughtSignature: Data should be valid base64",
        "a placeholder signature",
    ),
    "gemini__*__cache_5m_thinking_last.json": (
        "thoughtSignature: Data should be valid base64",
        "a placeholder signature",
    ),
    # The shared cases' redacted thinking is "opaque", not base64; Converse's redactedContent
    # is a blob, and real ones are echoed as Bedrock sent them (base64).
    "bedrock__*__thinking_ours.json": (
        "redactedContent: not base64",
        "placeholder redacted thinking",
    ),
    "bedrock__*__cache_5m_thinking_last.json": (
        "redactedContent: not base64",
        "placeholder redacted thinking",
    ),
}


def known_failure(name):
    for glob, (text, why) in KNOWN_FAILURES.items():
        if fnmatch.fnmatchcase(name, glob):
            return glob, text, why
    return None


class Invalid(Exception):
    """A body the SDK's types reject; args are the error lines."""


# ---- pydantic: the Anthropic and OpenAI TypedDicts, google-genai's models ----


# Where pydantic names the branch of a union an error belongs to rather than a field.
BRANCHES = {"str", "int", "float", "bool", "none", "bytes"}


def condense(e: pydantic.ValidationError, prefix: str = "", skip: int = 0) -> list[str]:
    """The errors worth reading. A union reports why each of its members failed; members with
    a literal that did not match (a block's `type`, a message's `role`) were not what the body
    meant, so their errors are dropped, and so are the members that are another kind of value
    (`str` where a list was given). Whatever is left is shown, type descriptions cut from the
    path; if nothing is, the mismatched literals are."""
    errors = e.errors(include_url=False)
    mismatched = {err["loc"][:-1] for err in errors if err["type"] == "literal_error"}

    def branch(loc):
        return any(str(x) in BRANCHES or "[" in str(x) for x in loc[-1:])

    plausible = [
        err
        for err in errors
        if not any(err["loc"][: len(p)] == p for p in mismatched) and not branch(err["loc"])
    ]
    kept = plausible or [err for err in errors if err["type"] == "literal_error"] or errors
    lines = []
    for err in kept[:6]:
        loc = ".".join(str(x) for x in err["loc"][skip:] if "[" not in str(x))
        lines.append(f"{prefix}{'.' if prefix and loc else ''}{loc}: {err['msg']}"[:300])
    if len(kept) > 6:
        lines.append(f"... and {len(kept) - 6} more")
    return lines


def force(x, path="$"):
    """`x` with every lazily validated iterator drained into a list (raising Invalid for a bad
    item); an SDK response model that matched with unknown keys is rejected."""
    if isinstance(x, BaseModel):
        extra = x.model_extra or {}
        if extra:
            kept_by = type(x).__name__
            raise Invalid(
                f"{path}: unknown keys {sorted(extra)} (kept only by the SDK's {kept_by})"
            )
        for name in type(x).model_fields:
            force(getattr(x, name), f"{path}.{name}")
        return x
    if isinstance(x, dict):
        return {k: force(v, f"{path}.{k}") for k, v in x.items()}
    if isinstance(x, (list, tuple, collections.abc.Iterator)):
        out = []
        it = iter(x)
        while True:
            try:
                item = next(it)
            except StopIteration:
                return out
            except pydantic.ValidationError as e:
                raise Invalid(*condense(e, f"{path}[{len(out)}]", skip=1)) from None
            out.append(force(item, f"{path}[{len(out)}]"))
    return x


def dropped(given, value, path="$"):
    """The keys of `given` that validation left out of `value`: pydantic ignores a key no
    TypedDict declares unless it forbids extras, so this catches any the patch missed."""
    if isinstance(given, dict) and isinstance(value, dict):
        lost = [f"{path}.{k}: not a field of the SDK type" for k in given if k not in value]
        return lost + [
            e for k in given if k in value for e in dropped(given[k], value[k], f"{path}.{k}")
        ]
    if isinstance(given, list) and isinstance(value, list):
        return [
            e for i, (g, v) in enumerate(zip(given, value)) for e in dropped(g, v, f"{path}[{i}]")
        ]
    return []


def forbid_extras(t, seen=None):
    """Makes every TypedDict reachable from `t` refuse unknown keys. pydantic ignores them by
    default, and a TypeAdapter's config does not reach a TypedDict with a config of its own
    (the SDKs give one to those holding file inputs, e.g. Base64ImageSourceParam), so each
    class gets extra='forbid' merged into its own __pydantic_config__."""
    seen = set() if seen is None else seen
    if id(t) in seen:
        return
    seen.add(id(t))
    if typing_extensions.is_typeddict(t):
        t.__pydantic_config__ = {**getattr(t, "__pydantic_config__", {}), "extra": "forbid"}
        for hint in typing_extensions.get_type_hints(t, include_extras=True).values():
            forbid_extras(hint, seen)
    for arg in typing_extensions.get_args(t):
        forbid_extras(arg, seen)


@functools.cache
def strict_adapter(t):
    forbid_extras(t)
    return TypeAdapter(t)


def check_typed_dict(t, body):
    try:
        value = strict_adapter(t).validate_python(body, strict=True)
    except pydantic.ValidationError as e:
        lines = condense(e)
        # Unknown top-level keys alone: the rest is checked without them, so that they do not
        # hide what else is wrong (the lazy fields are not checked when validation fails).
        unknown = {
            err["loc"][0]
            for err in e.errors()
            if err["type"] == "extra_forbidden" and len(err["loc"]) == 1
        }
        if unknown and len(unknown) == e.error_count():
            try:
                check_typed_dict(t, {k: v for k, v in body.items() if k not in unknown})
            except Invalid as rest:
                lines += rest.args
        raise Invalid(*lines) from None
    lost = dropped(body, force(value))
    if lost:
        raise Invalid(*lost)


def check_anthropic(variant, body):
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    if variant == "vertex":
        body = dict(body)
        if body.pop("anthropic_version", None) != "vertex-2023-10-16":
            raise Invalid("a Vertex body needs anthropic_version vertex-2023-10-16")
        if "model" in body:
            raise Invalid("a Vertex body has no model (it goes in the URL)")
        body["model"] = "claude-sonnet-4-5"
    check_typed_dict(MessageCreateParamsStreaming, body)


def check_openai(variant, body):
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    check_typed_dict(CompletionCreateParamsStreaming, body)


def check_openai_responses(variant, body):
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    check_typed_dict(ResponseCreateParamsStreaming, body)


def gemini_top():
    from google.genai import types

    return {
        "contents": list[types.Content],
        "systemInstruction": types.Content,
        "tools": list[types.Tool],
        "toolConfig": types.ToolConfig,
        "generationConfig": types.GenerationConfig,
        "safetySettings": list[types.SafetySetting],
        "cachedContent": str,
        "labels": dict[str, str],
    }


@functools.cache
def adapter(t):
    return TypeAdapter(t)


def check_gemini(variant, body):
    errors = []
    top = gemini_top()
    if "contents" not in body:
        errors.append("contents: missing")
    for key, value in body.items():
        if key not in top:
            errors.append(f"{key}: not a field of the generateContent request")
            continue
        try:
            # From JSON, as the API reads it: bytes fields are base64 there.
            adapter(top[key]).validate_json(json.dumps(value), strict=True)
        except pydantic.ValidationError as e:
            errors.extend(condense(e, key))
    if errors:
        raise Invalid(*errors)


# ---- botocore: Bedrock's Converse ----


@functools.cache
def converse_shape():
    import botocore.session

    service = botocore.session.get_session().get_service_model("bedrock-runtime")
    return service.operation_model("ConverseStream").input_shape


def botocore_params(value, shape, path, errors):
    """`value` as botocore takes it (base64 blobs decoded to bytes), noting enum violations
    and blobs that are not base64 in `errors`; the rest is left to ParamValidator."""
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        return {
            k: botocore_params(v, shape.members[k], f"{path}.{k}", errors)
            if k in shape.members
            else v
            for k, v in value.items()
        }
    if kind == "list" and isinstance(value, list):
        return [
            botocore_params(v, shape.member, f"{path}[{i}]", errors) for i, v in enumerate(value)
        ]
    if kind == "map" and isinstance(value, dict):
        return {k: botocore_params(v, shape.value, f"{path}.{k}", errors) for k, v in value.items()}
    if kind == "blob" and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as e:
            errors.append(f"{path}: not base64 ({e})")
            return value
    if kind == "string" and isinstance(value, str) and shape.enum and value not in shape.enum:
        errors.append(f"{path}: {value!r} is not one of {shape.enum}")
    return value


def check_bedrock(variant, body):
    import botocore.validate

    shape = converse_shape()
    errors = []
    params = botocore_params(dict(body), shape, "$", errors)
    params.setdefault("modelId", "us.anthropic.claude-sonnet-4-5-20250929-v1:0")
    report = botocore.validate.ParamValidator().validate(params, shape)
    if report.has_errors():
        errors.extend(line.strip() for line in report.generate_report().splitlines())
    if errors:
        raise Invalid(*errors)


CHECKS = {
    "anthropic": check_anthropic,
    "openai": check_openai,
    "openai_responses": check_openai_responses,
    "gemini": check_gemini,
    "bedrock": check_bedrock,
}


def errors_of(wire, variant, body):
    try:
        CHECKS[wire](variant, body)
    except Invalid as e:
        return [str(a) for a in e.args]
    return []


# ---- the run ----


def validate_dir(directory: Path, out=print) -> bool:
    files = sorted(directory.glob("*.json"))
    seen = dict.fromkeys(WIRES, 0)
    used = set()
    ok = True
    for path in files:
        parts = path.stem.split("__")
        if len(parts) != 3 or parts[0] not in CHECKS:
            out(f"FAIL {path.name}: not WIRE__VARIANT__CASE.json with WIRE one of {WIRES}")
            ok = False
            continue
        wire, variant, _ = parts
        seen[wire] += 1
        try:
            errors = errors_of(wire, variant, json.loads(path.read_text()))
        except json.JSONDecodeError as e:
            errors = [f"not JSON: {e}"]
        known = known_failure(path.name)
        if known:
            used.add(known[0])
        if known and errors and all(known[1] in e for e in errors):
            out(f"KNOWN {path.name}: {' | '.join(errors)} ({known[2]})")
        elif known and not errors:
            out(f"FAIL {path.name}: passes now; take {known[0]} out of KNOWN_FAILURES")
            ok = False
        elif errors:
            out(f"FAIL {path.name}: {' | '.join(errors)}")
            ok = False
        else:
            out(f"OK   {path.name}")
    for glob in KNOWN_FAILURES.keys() - used:
        out(f"FAIL {glob}: in KNOWN_FAILURES but no body matches it")
        ok = False
    for wire, n in seen.items():
        if n == 0:
            out(f"FAIL {wire}: no bodies in {directory} (an empty dump must not pass)")
            ok = False
    out(f"{len(files)} bodies, {'all valid' if ok else 'some INVALID'}")
    return ok


# ---- the control: each check rejects bodies known to be wrong ----

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="
GOOD = {
    "anthropic": {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                    {"type": "text", "text": "what is it?", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "a pixel"}]},
        ],
    },
    "openai": {
        "model": "gpt-4.1",
        "stream": True,
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                    {"type": "text", "text": "what is it?"},
                ],
            }
        ],
    },
    "openai_responses": {
        "model": "o3",
        "stream": True,
        "input": [
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{PNG}",
                        "detail": "auto",
                    },
                    {"type": "input_text", "text": "what is it?"},
                ],
            }
        ],
    },
    "gemini": {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"inlineData": {"mimeType": "image/png", "data": PNG}},
                    {"text": "what is it?"},
                ],
            }
        ],
        "generationConfig": {"maxOutputTokens": 64},
    },
    "bedrock": {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"image": {"format": "png", "source": {"bytes": PNG}}},
                    {"text": "what is it?"},
                ],
            }
        ],
        "inferenceConfig": {"maxTokens": 64},
    },
}


def mutations():
    """(wire, what, mutate, expected): `mutate` turns a copy of GOOD[wire] into a body the API
    refuses, and some error must contain `expected` (so it is refused for the right reason)."""

    def content(b, i, j):
        return b["messages"][i]["content"][j]

    def rename(d, old, new):
        d[new] = d.pop(old)

    def update(get, **kv):
        return lambda b: get(b).update(kv)

    image = functools.partial(content, i=0, j=0)
    return [
        (
            "anthropic",
            "media_type renamed mediaType",
            lambda b: rename(image(b)["source"], "media_type", "mediaType"),
            "media_type: Field required",
        ),
        (
            "anthropic",
            "an unknown key in an assistant text block",
            update(lambda b: content(b, 1, 0), citation="x"),
            "unknown keys ['citation']",
        ),
        (
            "anthropic",
            "an image block without its source",
            lambda b: image(b).pop("source"),
            "ImageBlockParam.source: Field required",
        ),
        (
            "anthropic",
            "an unknown top-level key",
            update(lambda b: b, reasoning_effort="high"),
            "reasoning_effort: Extra inputs",
        ),
        # Base64ImageSourceParam has a pydantic config of its own (which ignores unknown keys).
        (
            "anthropic",
            "an unknown key in an image's source",
            update(lambda b: image(b)["source"], detail="auto"),
            "source.Base64ImageSourceParam.detail: Extra",
        ),
        # `tools` is an Iterable, which pydantic validates only as it is iterated.
        (
            "anthropic",
            "a tool without input_schema",
            update(lambda b: b, tools=[{"name": "grep"}]),
            "input_schema: Field required",
        ),
        (
            "openai",
            "an unknown key in a content part",
            update(lambda b: content(b, 0, 1), cache_control={}),
            "cache_control: Extra inputs",
        ),
        (
            "openai",
            "image_url as a bare string",
            update(image, image_url=f"data:image/png;base64,{PNG}"),
            "image_url: Input should be a valid dictionary",
        ),
        (
            "openai",
            "a role that does not exist",
            update(lambda b: b["messages"][0], role="human"),
            "role: Input should be",
        ),
        (
            "openai_responses",
            "an unknown key in an input_image",
            update(lambda b: b["input"][0]["content"][0], mime_type="image/png"),
            "mime_type: Extra inputs",
        ),
        (
            "openai_responses",
            "a Chat content part in Responses",
            update(lambda b: b["input"][0]["content"][1], type="text"),
            "type: Input should be 'input_text'",
        ),
        (
            "gemini",
            "mimeType renamed mediaType",
            lambda b: rename(b["contents"][0]["parts"][0]["inlineData"], "mimeType", "mediaType"),
            "mediaType: Extra",
        ),
        (
            "gemini",
            "inline data that is not base64",
            update(lambda b: b["contents"][0]["parts"][0]["inlineData"], data="not base64!"),
            "valid base64",
        ),
        (
            "gemini",
            "an unknown top-level key",
            update(lambda b: b, thinkingConfig={}),
            "thinkingConfig: not a field",
        ),
        (
            "gemini",
            "an unknown key in generationConfig",
            update(lambda b: b["generationConfig"], maxTokens=64),
            "maxTokens: Extra inputs",
        ),
        (
            "bedrock",
            "an image format bmp",
            update(lambda b: image(b)["image"], format="bmp"),
            "'bmp' is not one of",
        ),
        (
            "bedrock",
            "an unknown key in inferenceConfig",
            update(lambda b: b["inferenceConfig"], max_tokens=64),
            'Unknown parameter in inferenceConfig: "max_tokens"',
        ),
        (
            "bedrock",
            "image bytes that are not base64",
            update(lambda b: image(b)["image"]["source"], bytes="%%%"),
            "not base64",
        ),
        (
            "bedrock",
            "two kinds in one content block",
            lambda b: content(b, 0, 1).update(image(b)),
            "Invalid number of parameters set for tagged union",
        ),
    ]


def self_test() -> bool:
    ok = True
    for wire, body in GOOD.items():
        errors = errors_of(wire, "self_test", copy.deepcopy(body))
        print(f"{'ok  ' if not errors else 'FAIL'} {wire}: the good body passes", *errors[:1])
        ok &= not errors
    vertex = dict(GOOD["anthropic"], anthropic_version="vertex-2023-10-16")
    vertex.pop("model")
    errors = errors_of("anthropic", "vertex", vertex)
    print(
        f"{'ok  ' if not errors else 'FAIL'} anthropic: the good body passes as Vertex's",
        *errors[:1],
    )
    ok &= not errors
    for wire, what, mutate, expected in mutations():
        body = copy.deepcopy(GOOD[wire])
        mutate(body)
        errors = errors_of(wire, "self_test", body)
        right = [e for e in errors if expected in e]
        verdict = "ok  " if right else "FAIL"
        shown = right[0] if right else f"wanted an error with {expected!r}, got {errors or 'none'}"
        print(f"{verdict} {wire}: rejects {what}: {shown}")
        ok &= bool(right)
    # A dump missing a wire must fail, even when every body in it is valid.
    with tempfile.TemporaryDirectory() as d:
        for wire in WIRES[:-1]:
            (Path(d) / f"{wire}__self__good.json").write_text(json.dumps(GOOD[wire]))
        lines = []
        passed = validate_dir(Path(d), out=lines.append)
        print(f"{'FAIL' if passed else 'ok  '} a dump without {WIRES[-1]} bodies fails")
        ok &= not passed
    print("self-test", "passed" if ok else "FAILED")
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "dir", nargs="?", type=Path, help="the directory of WIRE__VARIANT__CASE.json bodies"
    )
    parser.add_argument("--self-test", action="store_true", help="check that each check can fail")
    args = parser.parse_args()
    if args.self_test:
        return 0 if self_test() else 1
    if args.dir is None:
        parser.error("a directory, or --self-test")
    if not args.dir.is_dir():
        parser.error(f"{args.dir} is not a directory")
    return 0 if validate_dir(args.dir) else 1


if __name__ == "__main__":
    sys.exit(main())
