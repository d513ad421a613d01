#!/usr/bin/env python3
"""A loopback Anthropic Messages API for bench/queue/run.sh: every job takes three rounds, two
that read a file and then the answer, as the tests' `three_rounds` script does. It prints its
port on the first line of stdout and serves until killed."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def event(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n"


def reply(rounds_before):
    usage = {"input_tokens": 10, "output_tokens": 1}
    out = [event("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-bench",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}})]
    if rounds_before < 2:
        block = {"type": "tool_use", "id": f"toolu_{rounds_before}", "name": "read_file",
                 "input": {}}
        delta = {"type": "input_json_delta", "partial_json": '{"path":"a.txt"}'}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": "done"}
        stop = "end_turn"
    out.append(event("content_block_start",
                     {"type": "content_block_start", "index": 0, "content_block": block}))
    out.append(event("content_block_delta",
                     {"type": "content_block_delta", "index": 0, "delta": delta}))
    out.append(event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    out.append(event("message_delta", {"type": "message_delta", "delta": {
        "stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}}))
    out.append(event("message_stop", {"type": "message_stop"}))
    return "".join(out).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: without this, Nagle's algorithm and the client's
    # delayed ACK hold each reply back by 40 ms.
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        before = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        data = reply(before)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
