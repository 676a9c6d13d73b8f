"""A TLS front for a PostgreSQL server that has no TLS of its own (the test
server, `scripts/pg`, is built without SSL), for the tests of the shared
store's TLS connections.

    python pg_tls_front.py --upstream-port PORT --cert-dir DIR [--refuse-tls | --also-plain]

It speaks PostgreSQL's own negotiation, as a server with `ssl = on` does: the
client's 8-byte SSLRequest (length 8, code 80877103) is answered `S`, the TLS
handshake follows on the same connection, and the decrypted stream is relayed
to the server's plain port on 127.0.0.1. A GSSENCRequest is answered `N`.

- Without `--refuse-tls`, a client that does not ask for TLS is disconnected:
  a connection through this front that works was encrypted.
- With `--refuse-tls`, the SSLRequest is answered `N` and the connection is
  relayed unencrypted, as a server with `ssl = off` answers.
- With `--also-plain`, TLS is offered and a client that does not ask for it
  is relayed unencrypted, as a server with `ssl = on` and `host` lines in
  pg_hba.conf does.

Before it listens, it creates in DIR (with the `openssl` command):
- `ca.pem`: a test CA;
- `server.pem`, `server.key`: the front's certificate, signed by that CA, for
  the host name `localhost` only (so a client connecting to 127.0.0.1 with
  host-name checks refuses it);
- `other-ca.pem`: a CA that signed nothing here (a root that does not trust
  the front's certificate).

The first line on stdout is `listening on 127.0.0.1:PORT`; it serves until it
is killed. Python's standard library and the openssl command only.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import struct
import subprocess
from pathlib import Path

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104


def openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def make_certificates(d: Path) -> None:
    """A CA, a server certificate it signs for localhost, and an unrelated CA."""
    d.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for name in ("ca", "other-ca"):
        openssl(
            "req", "-x509", *ec, "-keyout", str(d / f"{name}.key"), "-out", str(d / f"{name}.pem"),
            "-days", "2", "-subj", f"/CN=code-intel test {name}",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )
    openssl("req", *ec, "-keyout", str(d / "server.key"), "-out", str(d / "server.csr"), "-subj", "/CN=localhost")
    (d / "server.ext").write_text(
        "subjectAltName=DNS:localhost\n"
        "basicConstraints=critical,CA:FALSE\n"
        "keyUsage=critical,digitalSignature\n"
        "extendedKeyUsage=serverAuth\n"
    )
    openssl(
        "x509", "-req", "-in", str(d / "server.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
        "-CAcreateserial", "-out", str(d / "server.pem"), "-days", "2", "-extfile", str(d / "server.ext"),
    )


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, ssl.SSLError, OSError, RuntimeError):
            pass


async def handle(reader, writer, args, context) -> None:
    upstream = None
    try:
        head = await reader.readexactly(8)
        length, code = struct.unpack("!II", head)
        if length == 8 and code == GSSENC_REQUEST:
            writer.write(b"N")
            await writer.drain()
            head = await reader.readexactly(8)
            length, code = struct.unpack("!II", head)
        first = b""
        if length == 8 and code == SSL_REQUEST:
            if args.refuse_tls:
                writer.write(b"N")
                await writer.drain()
            else:
                writer.write(b"S")
                await writer.drain()
                await writer.start_tls(context)
        elif args.refuse_tls or args.also_plain:
            first = head
        else:
            return  # TLS only: a client that did not ask for it is dropped
        up_reader, upstream = await asyncio.open_connection("127.0.0.1", args.upstream_port)
        upstream.write(first)
        await asyncio.gather(pipe(reader, upstream), pipe(up_reader, writer))
    except (asyncio.IncompleteReadError, ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        for w in (writer, upstream):
            if w is not None:
                try:
                    w.close()
                except (ConnectionError, ssl.SSLError, OSError, RuntimeError):
                    pass


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--upstream-port", type=int, required=True)
    parser.add_argument("--cert-dir", type=Path, required=True)
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--refuse-tls", action="store_true")
    modes.add_argument("--also-plain", action="store_true")
    args = parser.parse_args()
    make_certificates(args.cert_dir)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert_dir / "server.pem", args.cert_dir / "server.key")
    server = await asyncio.start_server(lambda r, w: handle(r, w, args, context), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"listening on 127.0.0.1:{port}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
