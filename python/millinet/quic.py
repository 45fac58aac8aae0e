"""QUIC over the emulated path (docs/emulator.md, "QUIC"): an HTTP/3 file server and client on
aioquic, a maintained QUIC stack (RFC 9000, HTTP/3 RFC 9114), for the `millinet quic`
commands that run them in the emulator's namespaces as `--server` and `-- COMMAND`.

The server answers `GET /PATH` with the file DIRECTORY/PATH, under a self-signed certificate
it makes when it starts (the client does not verify it: the testbed has no PKI). Both ends run
the congestion control given (aioquic's `reno` or `cubic`)."""

from __future__ import annotations

import asyncio
import datetime
import ssl
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated, QuicEvent

CONGESTION_CONTROLS = ("reno", "cubic")


class QuicFailed(Exception):
    """The download did not complete: no answer, an error status, or the time ran out."""


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate and key for `millinet-quic`, valid for a day, written into `directory`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "millinet-quic")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return cert_path, key_path


class _FileServer(QuicConnectionProtocol):
    """Answers each HTTP/3 GET with the file at its path under `root`, or 404."""

    root: Path

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._h3: H3Connection | None = None

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated):
            self._h3 = H3Connection(self._quic)
        if self._h3 is None:
            return
        for h3_event in self._h3.handle_event(event):
            if isinstance(h3_event, HeadersReceived):
                self._answer(h3_event)

    def _answer(self, request: HeadersReceived) -> None:
        assert self._h3 is not None
        path = dict(request.headers).get(b":path", b"/").decode(errors="replace").split("?")[0]
        file = (self.root / path.lstrip("/")).resolve()
        if self.root.resolve() not in file.parents or not file.is_file():
            self._h3.send_headers(request.stream_id, [(b":status", b"404")], end_stream=True)
        else:
            body = file.read_bytes()
            self._h3.send_headers(request.stream_id, [(b":status", b"200"), (b"content-length", str(len(body)).encode())])
            self._h3.send_data(request.stream_id, body, end_stream=True)
        self.transmit()


def serve_directory(directory: Path, port: int, congestion_control: str) -> None:
    """Serves `directory` over HTTP/3 on UDP `port` of every address, until killed."""

    class Server(_FileServer):
        root = Path(directory)

    async def main() -> None:
        with tempfile.TemporaryDirectory(prefix="millinet-quic-") as scratch:
            configuration = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, congestion_control_algorithm=congestion_control)
            configuration.load_cert_chain(*_self_signed(Path(scratch)))
            await serve("0.0.0.0", port, configuration=configuration, create_protocol=Server)
            await asyncio.Future()

    asyncio.run(main())


class _Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.status: bytes | None = None
        self.body = bytearray()
        self.done = asyncio.Event()

    def quic_event_received(self, event: QuicEvent) -> None:
        for h3_event in self.h3.handle_event(event):
            self._on(h3_event)

    def _on(self, event: H3Event) -> None:
        if isinstance(event, HeadersReceived):
            self.status = dict(event.headers).get(b":status")
        elif isinstance(event, DataReceived):
            self.body += event.data
        if getattr(event, "stream_ended", False):
            self.done.set()


def get(url: str, congestion_control: str, timeout_s: float) -> tuple[bytes, float]:
    """Fetches `url` (https://HOST:PORT/PATH) over HTTP/3; returns its body and the time from
    the connection's start to the last byte, in seconds."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname or not parts.port:
        raise QuicFailed(f"{url}: expected https://HOST:PORT/PATH")

    async def main() -> tuple[bytes, float]:
        configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, congestion_control_algorithm=congestion_control)
        configuration.verify_mode = ssl.CERT_NONE
        started = time.monotonic()
        async with connect(parts.hostname, parts.port, configuration=configuration, create_protocol=_Client) as client:
            stream = client._quic.get_next_available_stream_id()
            request = [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", parts.netloc.encode()), (b":path", (parts.path or "/").encode())]
            client.h3.send_headers(stream, request, end_stream=True)
            client.transmit()
            await client.done.wait()
            elapsed = time.monotonic() - started
            if client.status != b"200":
                raise QuicFailed(f"{url}: status {client.status.decode() if client.status else 'none'}")
            return bytes(client.body), elapsed

    try:
        return asyncio.run(asyncio.wait_for(main(), timeout_s))
    except (TimeoutError, asyncio.TimeoutError):
        raise QuicFailed(f"{url}: no complete answer within {timeout_s:g} s") from None
    except ConnectionError as e:
        raise QuicFailed(f"{url}: {e}") from None
