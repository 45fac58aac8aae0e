//! The hosts: the endpoints bound on nodes (a TCP connection, a UDP source or sink, each
//! with its timer slot), the scenario's flows with their applications and measurements, and
//! the port plan that gives every flow its identity on the wire.

use std::net::Ipv4Addr;

use millinet_network::NodeId;
use millinet_transport::app::{Application, FlowId};
use millinet_transport::mptcp::MptcpConnection;
use millinet_transport::udp::{UdpSink, UdpSource};
use millinet_transport::TcpConnection;
use millinet_wire::Packet;

use crate::metrics::LogHistogram;
use crate::scenario::FlowSpec;

/// The data sender listens on this port + flow index; the receiver connects from
/// the ephemeral port + flow index.
pub(super) const SERVER_PORT: u16 = 5001;
pub(super) const CLIENT_PORT: u16 = 40001;

/// The port plan: where a flow's sender listens and its receiver connects from.
pub(super) fn sender_port(flow: FlowId) -> u16 {
    SERVER_PORT + flow.0 as u16
}

pub(super) fn receiver_port(flow: FlowId) -> u16 {
    CLIENT_PORT + flow.0 as u16
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Sender,
    Receiver,
}

/// The transport model behind an endpoint. Not boxed although TCP is the largest variant:
/// it is also the one every packet of most runs goes through, and a box would add a pointer
/// chase to each.
#[allow(clippy::large_enum_variant)]
pub(super) enum Model {
    Tcp(TcpConnection),
    /// An MP-TCP connection, on local port `port` of every address of its node.
    Mptcp {
        port: u16,
        conn: MptcpConnection,
    },
    UdpSource(UdpSource),
    UdpSink {
        port: u16,
        sink: UdpSink,
    },
}

impl Model {
    #[inline]
    pub(super) fn on_packet(&mut self, now_ns: u64, packet: &Packet, out: &mut Vec<Packet>) {
        match self {
            Model::Tcp(c) => c.on_packet(now_ns, packet, out),
            Model::Mptcp { conn, .. } => conn.on_packet(now_ns, packet, out),
            Model::UdpSink { sink, .. } => sink.on_packet(packet),
            Model::UdpSource(_) => {}
        }
    }

    pub(super) fn on_timeout(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        match self {
            Model::Tcp(c) => c.on_timeout(now_ns, out),
            Model::Mptcp { conn, .. } => conn.on_timeout(now_ns, out),
            Model::UdpSource(s) => s.on_timeout(now_ns, out),
            Model::UdpSink { .. } => {}
        }
    }

    #[inline]
    pub(super) fn next_deadline_ns(&self) -> Option<u64> {
        match self {
            Model::Tcp(c) => c.next_deadline_ns(),
            Model::Mptcp { conn, .. } => conn.next_deadline_ns(),
            Model::UdpSource(s) => s.next_deadline_ns(),
            Model::UdpSink { .. } => None,
        }
    }

    /// Whether a packet from `src:src_port` to local port `dst_port` is for this endpoint.
    #[inline]
    pub(super) fn accepts(&self, src: Ipv4Addr, src_port: u16, dst_port: u16) -> bool {
        match self {
            Model::Tcp(c) => c.local().port() == dst_port && c.remote().is_none_or(|r| r.port() == src_port && *r.ip() == src),
            Model::UdpSink { port, .. } | Model::Mptcp { port, .. } => *port == dst_port,
            Model::UdpSource(_) => false,
        }
    }

    /// TCP connection `k` of the endpoint: a TCP flow's only one (k = 0) or an MP-TCP
    /// connection's subflow `k`; None past the last (and for UDP).
    #[inline]
    pub(super) fn subflow(&self, k: usize) -> Option<&TcpConnection> {
        match self {
            Model::Tcp(c) => (k == 0).then_some(c),
            Model::Mptcp { conn, .. } => conn.subflow(k),
            _ => None,
        }
    }

    /// Data the application writes, at the data level for MP-TCP.
    pub(super) fn send(&mut self, now_ns: u64, bytes: u64, out: &mut Vec<Packet>) {
        match self {
            Model::Tcp(c) => c.send(now_ns, bytes, out),
            Model::Mptcp { conn, .. } => conn.send(now_ns, bytes, out),
            _ => unreachable!("applications run over TCP or MP-TCP"),
        }
    }

    pub(super) fn close(&mut self, now_ns: u64, out: &mut Vec<Packet>) {
        match self {
            Model::Tcp(c) => c.close(now_ns, out),
            Model::Mptcp { conn, .. } => conn.close(now_ns, out),
            _ => unreachable!("applications run over TCP or MP-TCP"),
        }
    }
}

/// The MP-TCP connection of endpoint `e`, if it exists (a flow's receiver is None until it
/// connects) and is one.
pub(super) fn mptcp_at(endpoints: &[Endpoint], e: Option<u32>) -> Option<&MptcpConnection> {
    match e.map(|e| &endpoints[e as usize].model) {
        Some(Model::Mptcp { conn, .. }) => Some(conn),
        _ => None,
    }
}

pub(super) struct Endpoint {
    pub(super) node: NodeId,
    pub(super) flow: FlowId,
    pub(super) role: Role,
    pub(super) timer: u32,
    pub(super) model: Model,
}

/// Per-flow measurements, kept by the engine (the models only count).
pub(super) struct Flow {
    pub(super) spec: FlowSpec,
    /// The node of its destination.
    pub(super) dst: NodeId,
    pub(super) sender: u32,
    /// Its receiving endpoint, once there is one (a TCP receiver connects at the flow's start).
    pub(super) receiver: Option<u32>,
    pub(super) start_ns: u64,
    /// The TCP application, told when the sender is established (UDP flows: None).
    pub(super) app: Option<Box<dyn Application>>,
    pub(super) app_started: bool,
    /// The application's deadline as last scheduled (an `Event::AppDeadline` at another
    /// time is stale).
    pub(super) app_deadline_ns: Option<u64>,
    pub(super) delivered_bytes: u64,
    /// The RTT samples of each subflow (one for TCP); the flow's are all of them.
    pub(super) rtt: Vec<RttSamples>,
    /// Delivered payload bytes per goodput bin.
    pub(super) goodput_bins: Vec<u64>,
    /// MP-TCP: the receiver's reassembly buffer at each sample.
    pub(super) reorder: SampledBytes,
}

/// The RTT samples of one (sub)flow's sender.
#[derive(Default)]
pub(super) struct RttSamples {
    /// The sender's sample count when last looked at.
    pub(super) seen: u64,
    pub(super) histogram: LogHistogram,
}

impl Flow {
    /// The RTT samples of all the flow's subflows.
    pub(super) fn rtt(&self) -> LogHistogram {
        let mut all = LogHistogram::default();
        for subflow in &self.rtt {
            all.merge(&subflow.histogram);
        }
        all
    }
}

/// A byte count seen at every sample step: its mean over the samples.
#[derive(Default)]
pub(super) struct SampledBytes {
    samples: u64,
    sum_bytes: u128,
}

impl SampledBytes {
    pub(super) fn record(&mut self, bytes: u64) {
        self.samples += 1;
        self.sum_bytes += u128::from(bytes);
    }

    pub(super) fn mean_bytes(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_bytes as f64 / self.samples as f64)
    }
}
