"""HTTP front end: POST /reserve and POST /release with JSON bodies."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from inventory import Inventory

INVENTORY = Inventory({"apple": 10, "pear": 3})


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = json.loads(self.rfile.read(length) or b"{}")
        sku, quantity = body.get("sku"), int(body.get("quantity", 1))
        if self.path == "/reserve":
            ok = INVENTORY.reserve(sku, quantity)
        elif self.path == "/release":
            INVENTORY.release(sku, quantity)
            ok = True
        else:
            self.send_error(404)
            return
        self.send_response(200 if ok else 409)
        self.end_headers()
        self.wfile.write(json.dumps({"ok": ok}).encode())


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
