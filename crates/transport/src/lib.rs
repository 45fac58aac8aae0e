//! Transport models: TCP (sender and receiver), congestion controls, UDP sources,
//! applications and active queue management. Sans-IO: every entry point takes the
//! current time and returns packets/timers; nothing here reads a clock or does I/O.

pub mod app;
pub mod aqm;
pub mod cc;
pub mod deadline;
pub mod delivery;
pub mod link;
pub mod mptcp;
pub mod pacing;
pub mod tcp;
pub mod udp;

pub use tcp::{
    ConnectionHooks, ConnectionParts, CwndGrowth, DelayedAck, EcnMode, LimitedBy, LossDetection, NewRenoVariant, TcpConfig, TcpConnection,
    TcpError, TcpState, TcpStats,
};
