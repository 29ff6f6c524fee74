"""A stand-in for the Hugging Face hub's file endpoint, for tests/hub.rs.

Usage: mock_hub.py REPO FILE_PATH [--cut-after BYTES]
Serves FILE_PATH as `/{REPO}/resolve/main/{basename}` with the headers hf-hub reads (etag,
x-repo-commit, content-range) and HTTP range requests. With --cut-after, the first download
response closes the connection after that many bytes, so the client must resume. Prints the port
on the first line of stdout, then one line per request: `GET <path> <range>`.
"""

import http.server
import os
import sys

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def main():
    repo, path = sys.argv[1], sys.argv[2]
    cut_after = int(sys.argv[4]) if len(sys.argv) > 4 and sys.argv[3] == "--cut-after" else None
    size = os.path.getsize(path)
    route = f"/{repo}/resolve/main/{os.path.basename(path)}"
    state = {"cut": cut_after}

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            ranged = self.headers.get("Range", "")
            print(f"GET {self.path} {ranged}", flush=True)
            if self.path != route:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start, end = 0, size - 1
            if ranged.startswith("bytes="):
                first, _, last = ranged[len("bytes="):].partition("-")
                start = int(first)
                end = int(last) if last else size - 1
            length = end - start + 1
            self.send_response(206 if ranged else 200)
            self.send_header("ETag", f'"{COMMIT[:16]}-{size}"')
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            limit = length
            if state["cut"] is not None and length > 1:
                limit, state["cut"] = min(length, state["cut"]), None
            with open(path, "rb") as f:
                f.seek(start)
                left = limit
                while left > 0:
                    chunk = f.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
            if limit < length:
                # Drop the connection mid-body: the client sees a short read.
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)

    class Server(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # the cut connection, as intended; nothing to report

    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
