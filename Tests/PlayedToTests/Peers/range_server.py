#!/usr/bin/python3
"""The test's HTTP server: serves the files of one folder on 127.0.0.1 (the test's network namespace), with Range
requests (206 Partial Content) as renderers need them; --live answers as a live stream does: every request whole,
without Accept-Ranges nor Content-Length, the connection closed at the end. Prints the port it listens on, then one line per request on stderr. Runs until it is killed."""
import http.server, os, re, sys

folder = sys.argv[1]
ranges = "--live" not in sys.argv[2:]
types = {".ogg": "audio/ogg", ".oga": "audio/ogg", ".mp3": "audio/mpeg", ".flac": "audio/flac", ".wav": "audio/x-wav"}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1" if ranges else "HTTP/1.0"

    def log_message(self, format, *args):
        sys.stderr.write("%s range=%s\n" % (format % args, self.headers.get("Range")))
        sys.stderr.flush()

    def do_HEAD(self):
        self.answer(body=False)

    def do_GET(self):
        self.answer(body=True)

    def answer(self, body):
        path = os.path.join(folder, os.path.basename(self.path.split("?")[0]))
        if not os.path.isfile(path):
            self.send_error(404)
            return
        size = os.path.getsize(path)
        start, end, status = 0, size - 1, 200
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", "")) if ranges else None
        if match and (match.group(1) or match.group(2)):
            if match.group(1):
                start = int(match.group(1))
                end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
            else:
                start = max(0, size - int(match.group(2)))
            if start >= size or start > end:
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % size)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", types.get(os.path.splitext(path)[1], "application/octet-stream"))
        if ranges:
            self.send_header("Content-Length", str(end - start + 1))
            self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        self.end_headers()
        if not body:
            return
        with open(path, "rb") as f:
            f.seek(start)
            left = end - start + 1
            try:
                while left > 0:
                    chunk = f.read(min(65536, left))
                    if not chunk:
                        break
                    self.wfile.write(chunk)
                    left -= len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
