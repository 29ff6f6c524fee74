"""A stand-in for llama-server that ignores grammars, for the one failure a real llama-server
cannot show: `recall --engine` must refuse a server whose replies a grammar does not bind.

It answers the endpoints Recall reads at connect (/props, /v1/models, /tokenize) the way
llama-server does, and /completion with "x" whatever the grammar says. Prints its port, then
serves until killed.

    python3 tests/fake_engine.py
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def reply(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/props":
            self.reply(
                {
                    "chat_template": "{% for m in messages %}<|im_start|>{{ m.role }}\n"
                    "{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n",
                    "bos_token": "<|im_start|>",
                    "eos_token": "<|im_end|>",
                    "model_path": "/srv/models/other.gguf",
                    "model_alias": "other",
                    "default_generation_settings": {"n_ctx": 4096},
                }
            )
        elif self.path == "/v1/models":
            self.reply({"data": [{"id": "other"}]})
        else:
            self.send_error(404)

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/tokenize":
            # One token per character: enough for a connect.
            self.reply({"tokens": list(range(len(body.get("content", ""))))})
        elif self.path == "/completion":
            self.reply({"content": "x", "stop": True, "stop_type": "limit"})
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
