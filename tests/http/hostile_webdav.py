#!/usr/bin/env python3
"""A hostile WebDAV server on 127.0.0.1 for the HTTP storage's listing and batch tests.

A real server (nginx) cannot be made to answer PROPFIND with crafted multistatus bodies,
nor to announce a body's length and break the connection after part of it, so this one
does. It prints `port N` once it listens, then `PROPFIND PATH` or `GET PATH` for each
request, and serves until it is killed. Modes (the first argument):

  repeat  the base names the fan-out folder ab/ 500 times; ab/ holds one entry
  wide    the base names the 256 fan-out folders 00/ to ff/; each holds one entry and
          about 2 KiB of padding (each answer at most 62 KiB, all of them about 750 KiB)
  cut     GET of a name that starts with "cc": 200 with a Content-Length of CUT_ANNOUNCED
          bytes, CUT_SENT of them sent, then the connection closed; any other GET: 200
          with FOUND_SIZE bytes of "k"
"""

import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def response(href, collection=False, size=10):
    kind = "<D:resourcetype><D:collection/></D:resourcetype>" if collection else "<D:resourcetype/>"
    length = "" if collection else "<D:getcontentlength>%d</D:getcontentlength>" % size
    return ("<D:response><D:href>%s</D:href><D:propstat><D:prop>%s%s"
            "<D:getlastmodified>Wed, 02 Dec 2026 07:35:59 GMT</D:getlastmodified>"
            "</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n" % (href, kind, length))


CUT_ANNOUNCED = 600000
CUT_SENT = 1000
FOUND_SIZE = 100000


def entry_name(first_byte, i):
    return "%02x%062x" % (first_byte, i)


def answer(mode, path):
    parts = [response(path, collection=True)]
    if mode == "repeat":
        if path == "/":
            parts += [response("/ab/", collection=True)] * 500
        elif path == "/ab/":
            parts.append(response("/ab/" + entry_name(0xab, 1)))
    elif mode == "wide":
        if path == "/":
            parts += [response("/%02x/" % b, collection=True) for b in range(256)]
        elif len(path) == 4:
            b = int(path[1:3], 16)
            parts.append(response(path + entry_name(b, 1)))
            parts.append("<!-- %s -->\n" % ("x" * 2048))
    return ('<?xml version="1.0" encoding="utf-8"?>\n<D:multistatus xmlns:D="DAV:">\n' + "".join(parts) +
            "</D:multistatus>\n").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the headers and the body go in two writes: no 40 ms wait between answers

    def do_PROPFIND(self):  # noqa: N802 (the method's name)
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        print("PROPFIND " + self.path, flush=True)
        body = answer(self.server.mode, self.path)
        self.send_response(207)
        self.send_header("Content-Type", "application/xml; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 (the method's name)
        print("GET " + self.path, flush=True)
        if self.server.mode != "cut":
            self.send_error(404)
            return
        cut = self.path.rsplit("/", 1)[-1].startswith("cc")
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(CUT_ANNOUNCED if cut else FOUND_SIZE))
        self.end_headers()
        if not cut:
            self.wfile.write(b"k" * FOUND_SIZE)
            return
        # Part of the body, then the end of the connection: the client has the length it
        # was told and less than it.
        self.wfile.write(b"c" * CUT_SENT)
        self.wfile.flush()
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.mode = sys.argv[1]
    print("port %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
