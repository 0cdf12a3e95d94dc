#!/usr/bin/env python3
"""A hostile Redis server on 127.0.0.1 for what a real redis-server never answers.

It prints `port N` once it listens, reads RESP commands on each connection and answers
ECHO as a server does (the client's check that replies are in step), and each other
command by the mode (the first argument), until it is killed:

  bulky-listing  SCAN: cursor 0 and 200 names of the namespace `hostile` (a key in
                 hex each); any other command (the listing's OBJECT IDLETIME and
                 STRLEN, whose answers are integers): a string of 1,000,000 bytes
"""

import socket
import sys
import threading

NAMES = 200
BULK = b"$1000000\r\n" + b"x" * 1000000 + b"\r\n"


def commands(conn):
    """Yields each command read on conn (a list of bytes), until the peer closes."""
    buffer = b""

    def line():
        nonlocal buffer
        while b"\r\n" not in buffer:
            data = conn.recv(65536)
            if not data:
                raise EOFError
            buffer += data
        head, _, buffer = buffer.partition(b"\r\n")
        return head

    def exactly(n):
        nonlocal buffer
        while len(buffer) < n + 2:
            data = conn.recv(65536)
            if not data:
                raise EOFError
            buffer += data
        data, buffer = buffer[:n], buffer[n + 2:]
        return data

    while True:
        head = line()
        if not head.startswith(b"*"):
            return
        yield [exactly(int(line()[1:])) for _ in range(int(head[1:]))]


def scan_reply():
    names = [b"hostile:%064x" % i for i in range(NAMES)]
    return (b"*2\r\n$1\r\n0\r\n*%d\r\n" % len(names)) + b"".join(b"$%d\r\n%s\r\n" % (len(n), n) for n in names)


def serve(conn, mode):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for command in commands(conn):
            if command[0].upper() == b"ECHO" and len(command) == 2:
                conn.sendall(b"$%d\r\n%s\r\n" % (len(command[1]), command[1]))
            elif mode == "bulky-listing":
                conn.sendall(scan_reply() if command[0].upper() == b"SCAN" else BULK)
    except (EOFError, OSError):
        pass
    finally:
        conn.close()


def main():
    mode = sys.argv[1]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    print("port %d" % listener.getsockname()[1], flush=True)
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn, mode), daemon=True).start()


if __name__ == "__main__":
    main()
