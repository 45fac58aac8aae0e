//! Flows and queues as transport configurations.

use millinet_transport::app::AppSpec;
use millinet_transport::aqm::{Aqm as QueueAqm, Codel, DualPi2, DualPi2Config};
use millinet_transport::cc::{CubicVariant, HystartMode};
use millinet_transport::delivery::DeliveryOpportunities;
use millinet_transport::link::LinkParams;
use millinet_transport::mptcp::{MptcpConfig, Scheduler};
use millinet_transport::{CwndGrowth, DelayedAck, EcnMode, LossDetection, NewRenoVariant, TcpConfig};

use std::path::Path;
use std::sync::Arc;

use millinet_channel::traces::{load_mahimahi_opportunities, load_sinr_csv, SinrSeries, SinrTrace};
use millinet_channel::{CapacityCarrier, CapacityConfig, CapacityProcess, LinkRngs};

use super::seconds_to_ns;
use crate::radio::UeSpec;
use crate::{
    rng, App, Aqm, CapacityCarrierSpec, ConfigError, CubicVariantSpec, CwndGrowthSpec, DelayedAckSpec, EcnSpec, FlowSpec, HystartSpec,
    LinkSpec, LossDetectionSpec, MptcpSchedulerSpec, NewRenoVariantSpec,
};

/// The MTU CoDel is told: it does not drop while no more than one such packet is queued
/// (RFC 8289 §4.4, `maxpacket`).
const CODEL_MAX_PACKET_BYTES: u32 = 1500;

/// The application a TCP flow runs.
pub fn app_spec(f: &FlowSpec) -> AppSpec {
    match f.app {
        App::Bulk => AppSpec::Bulk,
        App::File => AppSpec::File { size_bytes: f.file_bytes },
        App::Repeated => AppSpec::Repeated { sizes_bytes: f.sizes_bytes.clone() },
        App::Rate => AppSpec::Rate { rate_bps: f.app_rate_bps },
    }
}

/// Either end of a TCP flow; `iss` comes from the run's random streams.
pub fn tcp_config(f: &FlowSpec, iss: u32) -> TcpConfig {
    TcpConfig {
        cc: f.cc.clone(),
        mss_bytes: f.mss_bytes,
        initial_window_segments: f.initial_window_segments,
        sack: f.sack,
        timestamps: f.timestamps,
        window_scaling: f.window_scaling,
        delayed_ack: match f.delayed_ack {
            DelayedAckSpec::Off => DelayedAck::Off,
            DelayedAckSpec::Rfc5681 => DelayedAck::Rfc5681,
            DelayedAckSpec::Linux => DelayedAck::Linux,
        },
        min_rto_ns: seconds_to_ns(f.min_rto_s),
        rcv_buf_bytes: f.rcv_buf_bytes,
        newreno_variant: match f.newreno_variant {
            NewRenoVariantSpec::Impatient => NewRenoVariant::Impatient,
            NewRenoVariantSpec::SlowButSteady => NewRenoVariant::SlowButSteady,
        },
        cwnd_growth: match f.cwnd_growth {
            CwndGrowthSpec::CwndLimited => CwndGrowth::WhenCwndLimited,
            CwndGrowthSpec::Always => CwndGrowth::Always,
        },
        undo_spurious_rto: f.undo_spurious_rto,
        hystart: match f.hystart {
            HystartSpec::Off => HystartMode::Off,
            HystartSpec::Linux => HystartMode::Linux,
            HystartSpec::Rfc9406 => HystartMode::Rfc9406,
        },
        cubic: match f.cubic_variant {
            CubicVariantSpec::Linux => CubicVariant::Linux,
            CubicVariantSpec::Rfc9438 => CubicVariant::Rfc9438,
        },
        prr: f.prr,
        loss_detection: match f.loss_detection {
            LossDetectionSpec::RackTlp => LossDetection::RackTlp,
            LossDetectionSpec::Rfc6675 => LossDetection::Rfc6675,
        },
        ecn: match f.ecn {
            EcnSpec::Off => EcnMode::Off,
            EcnSpec::Rfc3168 => EcnMode::Rfc3168,
            EcnSpec::Accurate => EcnMode::Accurate,
        },
        iss,
        ..TcpConfig::default()
    }
}

/// Either end of an MP-TCP flow: every subflow configured as the flow's TCP, the default
/// (lowest-RTT) scheduler, the data-level receive buffer of `rcv_buf_bytes`; `seed` (from the
/// run's random streams) draws its key, initial sequence numbers and nonces.
pub fn mptcp_config(f: &FlowSpec, seed: u64) -> MptcpConfig {
    let scheduler = match f.mptcp_scheduler {
        MptcpSchedulerSpec::LowestRtt => Scheduler::LowestRtt,
        MptcpSchedulerSpec::RoundRobin => Scheduler::RoundRobin,
    };
    MptcpConfig { tcp: tcp_config(f, 0), scheduler, rcv_buf_bytes: f.rcv_buf_bytes, seed }
}

/// The delivery opportunities serving link `i`'s direction a→b (`a_to_b`) or b→a, when it
/// has a Mahimahi trace (read relative to `base_dir`).
pub fn link_opportunities(i: usize, spec: &LinkSpec, a_to_b: bool, base_dir: &Path) -> Result<Option<DeliveryOpportunities>, ConfigError> {
    let (field, trace) = if a_to_b { ("trace_a_to_b", &spec.trace_a_to_b) } else { ("trace_b_to_a", &spec.trace_b_to_a) };
    if trace.is_empty() {
        return Ok(None);
    }
    let err = |e: &dyn std::fmt::Display| ConfigError::new(format!("links.{i}.{field}: {e}"));
    let t = load_mahimahi_opportunities(&base_dir.join(trace)).map_err(|e| err(&e))?;
    DeliveryOpportunities::new(t.ms, t.period_ms).map(Some).map_err(|_| err(&format!("{trace}: no delivery opportunity in its period")))
}

/// One direction of a wired link, named `name`, leading to node `to_node` (as its driver
/// numbers nodes). Its rate changes as its [`super::LinkRate`] says.
/// Its AQM draws from the run's stream `aqm_stream` of `seed`.
pub fn link_params(spec: &LinkSpec, name: String, to_node: u32, seed: u64, aqm_stream: &str) -> LinkParams {
    let rate_bps = spec.rate_bps.round() as u64;
    LinkParams {
        name,
        to_node,
        rate_bps,
        switch_rate_bps: if spec.switch_period_s > 0.0 { spec.switch_rate_bps.round() as u64 } else { rate_bps },
        delay_ns: seconds_to_ns(spec.delay_s),
        limit_bytes: spec.queue_bytes,
        limit_packets: if spec.queue_packets == 0 { u64::MAX } else { spec.queue_packets },
        aqm: queue_aqm(spec.aqm, link_codel(spec), DualPi2Config::default(), seed, aqm_stream),
        opportunities: None,
    }
}

/// The capacity process of link `i`'s a→b direction, if it has one (docs/studies.md#spep-emulation), drawing
/// from the run's stream `links/i/capacity`; a `sinr_trace` is read relative to `base_dir`.
pub(super) fn capacity_process(i: usize, spec: &LinkSpec, seed: u64, base_dir: &Path) -> Result<Option<CapacityProcess>, ConfigError> {
    let Some(c) = &spec.capacity else { return Ok(None) };
    let err = |e: &dyn std::fmt::Display| ConfigError::new(format!("links.{i}.capacity.sinr_trace: {e}"));
    let sinr_base = if c.sinr_trace.is_empty() {
        SinrSeries::from_points(&[(0.0, c.sinr_db)]).map_err(|e| err(&e))?
    } else {
        match load_sinr_csv(&base_dir.join(&c.sinr_trace)).map_err(|e| err(&e))? {
            SinrTrace::Single(series) => series,
            SinrTrace::PerCell(_) => {
                return Err(err(&format!("{}: has a cell column; a capacity process takes one series (time_s,sinr_db)", c.sinr_trace)))
            }
        }
    };
    let carrier = match c.carrier {
        CapacityCarrierSpec::Lte => CapacityCarrier::Lte,
        CapacityCarrierSpec::Mmwave => CapacityCarrier::Mmwave { lambda_per_s: c.lambda_per_s, distance_m: c.distance_m },
    };
    let config = CapacityConfig {
        bandwidth_hz: c.bandwidth_hz,
        sinr_base: Arc::new(sinr_base),
        carrier,
        shadow_sigma_db: c.shadow_sigma_db,
        update_ns: seconds_to_ns(c.update_s),
        sinr_samples_per_s: c.sinr_samples_per_s,
        user_share: 1.0 / f64::from(c.users),
    };
    Ok(Some(CapacityProcess::new(config, LinkRngs::from_stream(rng::stream(seed, &format!("links/{i}/capacity"))))))
}

/// CoDel on a wired link with the link's target and interval.
pub fn link_codel(spec: &LinkSpec) -> Codel {
    Codel::new(seconds_to_ns(spec.codel_target_s), seconds_to_ns(spec.codel_interval_s), CODEL_MAX_PACKET_BYTES)
}

/// How a UE's RLC downlink buffer is managed (docs/models/transport.md §10).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RlcAqm {
    pub kind: Aqm,
    pub dualpi2: DualPi2Config,
}

impl RlcAqm {
    pub fn of(u: &UeSpec) -> RlcAqm {
        let dualpi2 = DualPi2Config {
            step_ns: seconds_to_ns(u.rlc_dualpi2_step_s),
            target_ns: seconds_to_ns(u.rlc_dualpi2_target_s),
            ..DualPi2Config::default()
        };
        RlcAqm { kind: u.rlc_aqm, dualpi2 }
    }

    /// The AQM of a new leg: CoDel with RFC 8289's defaults, target 5 ms and interval 100 ms,
    /// or DualPI2, drawing from the run's stream `stream` of `seed`; none for drop-tail.
    pub fn build(&self, seed: u64, stream: &str) -> Option<Box<dyn QueueAqm>> {
        queue_aqm(self.kind, Codel::new(5_000_000, 100_000_000, CODEL_MAX_PACKET_BYTES), self.dualpi2, seed, stream)
    }
}

/// A queue's AQM of `kind`: `codel` or `dualpi2` as configured, DualPI2 drawing from the run's
/// stream `stream`; none for drop-tail.
fn queue_aqm(kind: Aqm, codel: Codel, dualpi2: DualPi2Config, seed: u64, stream: &str) -> Option<Box<dyn QueueAqm>> {
    match kind {
        Aqm::Droptail => None,
        Aqm::Codel => Some(Box::new(codel)),
        Aqm::Dualpi2 => Some(Box::new(DualPi2::new(dualpi2, rng::stream(seed, stream)))),
    }
}
