//! What both of the daemon's modes share: the signal pipe (SIGTERM, SIGINT) and the metrics
//! endpoint, whose HTTP thread hands each request to the mode's loop and wakes it, so the
//! metrics are rendered from live state.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::{self, Receiver};

pub struct Control {
    metrics: Receiver<tiny_http::Request>,
    /// Readable when a metrics request waits in `metrics`.
    pub metrics_wake: UnixStream,
    /// Readable when SIGTERM or SIGINT arrived.
    pub signals: UnixStream,
}

impl Control {
    pub fn start(metrics_at: SocketAddr) -> Result<Control, String> {
        let (signals, signal_writer) = UnixStream::pair().map_err(|e| format!("cannot make the signal pipe: {e}"))?;
        for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
            let writer = signal_writer.try_clone().map_err(|e| format!("cannot make the signal pipe: {e}"))?;
            signal_hook::low_level::pipe::register(signal, writer).map_err(|e| format!("cannot handle signal {signal}: {e}"))?;
        }
        signals.set_nonblocking(true).map_err(|e| format!("signal pipe: {e}"))?;
        let server = tiny_http::Server::http(metrics_at).map_err(|e| format!("--metrics {metrics_at}: cannot listen: {e}"))?;
        let (metrics_wake, mut waker) = UnixStream::pair().map_err(|e| format!("--metrics: {e}"))?;
        metrics_wake.set_nonblocking(true).map_err(|e| format!("--metrics: {e}"))?;
        let (tx, metrics) = mpsc::channel();
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                for request in server.incoming_requests() {
                    if tx.send(request).is_err() || waker.write_all(&[1]).is_err() {
                        return;
                    }
                }
            })
            .map_err(|e| format!("--metrics: cannot start its thread: {e}"))?;
        Ok(Control { metrics, metrics_wake, signals })
    }

    /// Answers the waiting requests: `GET /metrics` with `render()`, anything else 404.
    pub fn answer_metrics(&mut self, render: &mut dyn FnMut() -> String) {
        let mut wake = [0u8; 64];
        while matches!(self.metrics_wake.read(&mut wake), Ok(n) if n > 0) {}
        while let Ok(request) = self.metrics.try_recv() {
            let response = match (request.method(), request.url()) {
                (tiny_http::Method::Get, "/metrics") => {
                    let header = tiny_http::Header::from_bytes("Content-Type", "text/plain; version=0.0.4").expect("a valid header");
                    tiny_http::Response::from_string(render()).with_header(header)
                }
                _ => tiny_http::Response::from_string("only GET /metrics is served here\n").with_status_code(404),
            };
            // A client that went away is its own business.
            let _ = request.respond(response);
        }
    }
}

pub fn poll_fd(fd: std::os::fd::RawFd) -> libc::pollfd {
    libc::pollfd { fd, events: libc::POLLIN, revents: 0 }
}
