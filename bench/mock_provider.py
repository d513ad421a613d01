#!/usr/bin/env python3
"""A minimal scripted provider for bench/symbol-order.sh: answers ROUNDS requests in Anthropic or
OpenAI streaming format, each round calling the tools named on the command line in turn, then a
final answer. Usage: mock_provider.py PORT anthropic|openai ROUNDS TOOL_CALL_JSON..."""
import http.server
import json
import sys

port, flavor, rounds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = [json.loads(c) for c in sys.argv[4:]]
state = {"n": 0}


def anthropic(call, final):
    ev = lambda name, data: f"event: {name}\ndata: {json.dumps(data)}\n\n"
    out = [ev("message_start", {"type": "message_start", "message": {"usage": {"input_tokens": 100, "output_tokens": 1}}})]
    out.append(ev("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    out.append(ev("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Working on it."}}))
    out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if not final:
        out.append(ev("content_block_start", {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": f"t{state['n']}", "name": call["name"], "input": {}}}))
        args = json.dumps(call["input"])
        for part in (args[: len(args) // 2], args[len(args) // 2 :]):
            out.append(ev("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": part}}))
        out.append(ev("content_block_stop", {"type": "content_block_stop", "index": 1}))
    stop = "end_turn" if final else "tool_use"
    out.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 30}}))
    out.append(ev("message_stop", {"type": "message_stop"}))
    return "".join(out)


def openai(call, final):
    chunk = lambda delta, finish=None: "data: " + json.dumps({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"
    out = [chunk({"role": "assistant", "content": "Working on it."})]
    if not final:
        args = json.dumps(call["input"])
        out.append(chunk({"tool_calls": [{"index": 0, "id": f"c{state['n']}", "type": "function", "function": {"name": call["name"], "arguments": args[: len(args) // 2]}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[len(args) // 2 :]}}]}))
    out.append(chunk({}, "stop" if final else "tool_calls"))
    out.append("data: " + json.dumps({"choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 30}}) + "\n\n")
    out.append("data: [DONE]\n\n")
    return "".join(out)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        state["n"] += 1
        final = state["n"] > rounds
        call = calls[(state["n"] - 1) % len(calls)] if calls else None
        body = (anthropic if flavor == "anthropic" else openai)(call, final or not calls).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
