#!/usr/bin/env python3
"""A model server that is not the project's own: Python's standard library only, sharing no code with
test/support/modelServer.ts. It stands for "a user's own model server" behind each agent CLI, configured through
the agent's own environment and config files (docs/agents.md, "Your agent's configuration is yours").

It speaks just enough of four APIs for one two-step turn:
  - OpenAI Responses API   POST <mode>/v1/responses                       (Codex, wire_api = "responses")
  - Chat Completions       POST <mode>/v1/chat/completions, GET /v1/models (opencode, Qwen Code, Copilot CLI BYOK)
  - Gemini API             POST <mode>/v1beta/models/<m>:streamGenerateContent | :generateContent | :countTokens

The first path segment, `<mode>` or `<mode>-<label>`, chooses how the "model" behaves (it is part of the base URL each
agent is given; the label only names the run in the log):
  /work  the first agent request calls the shell tool the agent offers: write hello.txt and tick the task's box;
         once the conversation holds a tool result, the answer is FINAL_WORK (a completion claim)
  /lazy  the same, but the command only ticks the box: the work is missing, and the answer FINAL_LAZY claims it done

Stateless: the step is read from the conversation each request carries (the number of tool results in it), so the
CLIs' own retries and side calls change nothing. A request without tools (a title, a router, a next-speaker check)
gets a short reply. Each request is appended to the JSON-lines log given as the first argument:
{"mode", "label", "api", "path", "agent": true|false, "answer": "tool"|"final"|"side", "tool": name}.

Usage: own-model-server.py LOG_FILE   (prints "listening PORT" on stdout once it accepts connections)
"""

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TICK = "sed -i 's/^- \\[ \\] Create hello.txt/- [x] Create hello.txt/' RALPH_TASK.md"
COMMANDS = {
    "work": "printf 'hello\\n' > hello.txt && " + TICK,
    # The box ticked, the work not done (and a harmless second command, as the work's is).
    "lazy": TICK + " && echo ticked",
}
FINAL_WORK = "hello.txt says hello and its box is ticked. <promise>COMPLETE</promise>"
FINAL_LAZY = "All done, nothing left to do. <promise>COMPLETE</promise>"
MODEL = "own-model"

LOG_LOCK = threading.Lock()
LOG_FILE = sys.argv[1] if len(sys.argv) > 1 else None


def log(entry):
    if not LOG_FILE:
        return
    with LOG_LOCK, open(LOG_FILE, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def shell_call(command, names):
    """The shell tool among the names offered, with the argument shape each CLI's tool takes: (name, arguments)."""
    for name, args in (
        ("exec_command", {"cmd": command}),  # Codex
        ("run_shell_command", {"command": command, "description": "run a command"}),  # Gemini CLI, Qwen Code
        ("bash", {"command": command, "description": "run a command"}),  # opencode, Copilot CLI
        ("shell", {"command": ["bash", "-lc", command]}),
    ):
        if name in names:
            return name, args
    raise ValueError("no shell tool among " + ", ".join(names))


def decide(mode, tool_results, offered):
    """("tool", name, args) or ("final", text)."""
    if tool_results == 0:
        name, args = shell_call(COMMANDS[mode], offered)
        return ("tool", name, args)
    return ("final", FINAL_WORK if mode == "work" else FINAL_LAZY)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seq = 0

    def log_message(self, *_):
        pass

    def next_id(self, prefix):
        Handler.seq += 1
        return "%s_%d" % (prefix, Handler.seq)

    # --- plumbing -------------------------------------------------------------------------------------------------

    def send_json(self, status, value):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_sse(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_sse(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def route(self):
        """(mode, label, path): `/work-codex/v1/responses` → ("work", "codex", "/v1/responses")."""
        path = self.path.split("?")[0]
        m = re.match(r"^/(work|lazy)(?:-(\w+))?(/.*)$", path)
        return (m.group(1), m.group(2), m.group(3)) if m else (None, None, path)

    def do_GET(self):
        mode, label, path = self.route()
        log({"mode": mode, "label": label, "api": "get", "path": path, "agent": False, "answer": "side"})
        if path.endswith("/models"):
            self.send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "own"}]})
        else:
            self.send_json(404, {"error": {"message": "not found: " + path, "type": "invalid_request_error"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        mode, label, path = self.route()
        if mode is None:
            self.send_json(404, {"error": {"message": "no mode in " + path, "type": "invalid_request_error"}})
            return
        if path == "/v1/responses":
            self.openai_responses(mode, label, path, body)
        elif path == "/v1/chat/completions":
            self.chat(mode, label, path, body)
        elif re.match(r"^/v1(beta|alpha)?/models/[^/:]+:\w+$", path):
            self.gemini(mode, label, path, body)
        else:
            log({"mode": mode, "label": label, "api": "?", "path": path, "agent": False, "answer": "side"})
            self.send_json(404, {"error": {"message": "not found: " + path, "type": "invalid_request_error"}})

    # --- OpenAI Responses API (Codex) -----------------------------------------------------------------------------

    def openai_responses(self, mode, label, path, body):
        items = body.get("input") if isinstance(body.get("input"), list) else []
        results = sum(1 for i in items if i.get("type") in ("function_call_output", "custom_tool_call_output"))
        offered = [
            t.get("name") for t in body.get("tools") or [] if t.get("type") == "function"
        ]
        answer = decide(mode, results, offered)
        log({"mode": mode, "label": label, "api": "responses", "path": path, "agent": True, "answer": answer[0],
             "tool": answer[1] if answer[0] == "tool" else None})
        self.start_sse()
        n = [0]

        def event(kind, data):
            data = dict(data, type=kind, sequence_number=n[0])
            n[0] += 1
            self.chunk("event: %s\ndata: %s\n\n" % (kind, json.dumps(data)))

        rid = self.next_id("resp")
        base = {"id": rid, "object": "response", "model": body.get("model", MODEL)}
        event("response.created", {"response": dict(base, status="in_progress", output=[])})
        if answer[0] == "tool":
            item = {"type": "function_call", "id": self.next_id("fc"), "call_id": self.next_id("call"),
                    "name": answer[1], "arguments": json.dumps(answer[2]), "status": "completed"}
        else:
            item = {"type": "message", "id": self.next_id("msg"), "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": answer[1], "annotations": []}]}
        event("response.output_item.added", {"output_index": 0, "item": item})
        event("response.output_item.done", {"output_index": 0, "item": item})
        usage = {"input_tokens": 300, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 320}
        event("response.completed", {"response": dict(base, status="completed", output=[item], usage=usage)})
        self.end_sse()

    # --- Chat Completions (opencode, Qwen Code, Copilot CLI) ------------------------------------------------------

    def chat(self, mode, label, path, body):
        messages = body.get("messages") or []
        offered = [
            (t.get("function") or {}).get("name") for t in body.get("tools") or []
        ]
        if offered:
            answer = decide(mode, sum(1 for m in messages if m.get("role") == "tool"), offered)
        else:
            answer = ("side", "Hello file")
        log({"mode": mode, "label": label, "api": "chat", "path": path, "agent": bool(offered), "answer": answer[0],
             "tool": answer[1] if answer[0] == "tool" else None})
        cid = self.next_id("chatcmpl")
        usage = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
        call = None
        if answer[0] == "tool":
            call = {"id": self.next_id("call"), "type": "function",
                    "function": {"name": answer[1], "arguments": json.dumps(answer[2])}}
        text = None if call else answer[1]
        finish = "tool_calls" if call else "stop"
        if not body.get("stream"):
            message = {"role": "assistant", "content": text}
            if call:
                message["tool_calls"] = [call]
            self.send_json(200, {"id": cid, "object": "chat.completion", "model": body.get("model", MODEL),
                                 "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                                 "usage": usage})
            return
        self.start_sse()

        def send(choices, **extra):
            data = {"id": cid, "object": "chat.completion.chunk", "model": body.get("model", MODEL),
                    "choices": choices, **extra}
            self.chunk("data: %s\n\n" % json.dumps(data))

        send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        if call:
            send([{"index": 0, "delta": {"tool_calls": [dict(call, index=0)]}, "finish_reason": None}])
        else:
            send([{"index": 0, "delta": {"content": text}, "finish_reason": None}])
        send([{"index": 0, "delta": {}, "finish_reason": finish}])
        send([], usage=usage)
        self.chunk("data: [DONE]\n\n")
        self.end_sse()

    # --- Gemini API (Gemini CLI) ----------------------------------------------------------------------------------

    def gemini(self, mode, label, path, body):
        method = path.rsplit(":", 1)[1]
        if method == "countTokens":
            log({"mode": mode, "label": label, "api": "gemini", "path": path, "agent": False, "answer": "side"})
            self.send_json(200, {"totalTokens": len(json.dumps(body)) // 4})
            return
        offered = [
            f.get("name")
            for t in body.get("tools") or []
            for f in t.get("functionDeclarations") or []
        ]
        if offered:
            results = sum(
                1 for c in body.get("contents") or [] for p in c.get("parts") or [] if "functionResponse" in p
            )
            answer = decide(mode, results, offered)
        else:
            # Side calls answer in JSON when asked to: the model router, the next-speaker check.
            config = json.dumps(body.get("generationConfig") or {})
            if "complexity_score" in config:
                text = json.dumps({"complexity_reasoning": "a small task", "complexity_score": 10})
            elif "next_speaker" in config:
                text = json.dumps({"reasoning": "the answer is complete", "next_speaker": "user"})
            else:
                text = "ok"
            answer = ("side", text)
        log({"mode": mode, "label": label, "api": "gemini", "path": path, "agent": bool(offered), "answer": answer[0],
             "tool": answer[1] if answer[0] == "tool" else None})
        if answer[0] == "tool":
            parts = [{"functionCall": {"name": answer[1], "args": answer[2], "id": self.next_id("call")}}]
        else:
            parts = [{"text": answer[1]}]
        reply = {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 300, "candidatesTokenCount": 20, "totalTokenCount": 320},
            "modelVersion": path.split("/")[-1].split(":")[0],
            "responseId": self.next_id("resp"),
        }
        if method != "streamGenerateContent":
            self.send_json(200, reply)
            return
        self.start_sse()
        self.chunk("data: %s\r\n\r\n" % json.dumps(reply))
        self.end_sse()


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print("listening %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
