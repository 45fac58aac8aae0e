//! The network's rows of the time series: every queue and every UE radio at each sample
//! step, and the handovers at the end (docs/outputs.md).

use millinet_ran::UeId;

use crate::network::Network;
use crate::series::{Mobility, Series};

impl Network {
    /// The `queues` and `ues` rows at `now_ns` (`t` in seconds); the UEs' RAN-latency windows
    /// start again.
    pub fn sample(&mut self, now_ns: u64, t: f64, s: &mut Series) {
        for (i, l) in self.links.iter_mut().enumerate() {
            s.queue_t.push(t);
            s.queue_id.push(i as u32);
            s.queue_bytes.push(l.queued_bytes(now_ns));
            s.queue_packets.push(l.queued_packets(now_ns));
            s.queue_rate_bps.push(l.rate_bps());
        }
        for (k, m) in self.ue_metrics.iter_mut().enumerate() {
            let ue = UeId(k as u32);
            let telemetry = self.radio.ran.telemetry(now_ns, ue);
            let state = self.radio.ran.link_state(ue).expect("every scenario UE is attached");
            let sinr = self.radio.ran.slot_sinr(ue).expect("every scenario UE is attached");
            s.ue_t.push(t);
            s.ue_id.push(k as u32);
            s.ue_sinr_db.push(sinr.sinr_db);
            s.ue_sir_db.push(sinr.sir_db);
            s.ue_inr_db.push(sinr.inr_db);
            s.ue_rate_bps.push(telemetry.rate_bps);
            s.ue_los.push(state.los as u32);
            s.ue_rlc_bytes.push(telemetry.rlc_bytes);
            s.ue_ran_latency_ms.push(if m.window_deliveries == 0 {
                f64::NAN
            } else {
                m.window_latency_ns as f64 / m.window_deliveries as f64 / 1e6
            });
            s.ue_cell.push(self.radio.serving_cell(ue).0);
            m.window_latency_ns = 0;
            m.window_deliveries = 0;
        }
    }

    /// The `mobility` table: every handover and bearer switch of the run.
    pub fn mobility_rows(&self) -> Mobility {
        let mut mobility = Mobility::default();
        for r in &self.handovers.log {
            mobility.t.push(r.t_ns as f64 / 1e9);
            mobility.ue.push(r.ue.0);
            mobility.kind.push(r.kind as u32);
            mobility.from_cell.push(r.from.0);
            mobility.to_cell.push(r.to.0);
            mobility.interruption_s.push(r.interruption_ns as f64 / 1e9);
            mobility.sdus_forwarded.push(r.sdus_forwarded);
            mobility.bytes_forwarded.push(r.bytes_forwarded);
        }
        mobility
    }
}
