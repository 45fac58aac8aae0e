//! The time series: one row per flow, queue, UE and proxied flow every sample step, handed
//! out in chunks so memory stays flat (outputs.md §2).

use super::*;

impl Simulation {
    pub(super) fn sample(&mut self) {
        let t = self.now_ns as f64 / 1e9;
        let s = &mut self.series;
        for (i, f) in self.flows.iter_mut().enumerate() {
            let model = &self.endpoints[f.sender as usize].model;
            let mut k = 0;
            while let Some(tcp) = model.subflow(k) {
                s.push_flow_row(t, i as u32, k as u32, &tcp.stats());
                k += 1;
            }
            if let Model::Mptcp { conn, .. } = model {
                // The receiver's reassembly buffer (empty until it connects).
                let reorder_bytes = mptcp_at(&self.endpoints, f.receiver).map_or(0, |c| c.stats().rcv_occupancy_bytes);
                f.reorder.record(reorder_bytes);
                s.mptcp_t.push(t);
                s.mptcp_flow.push(i as u32);
                s.mptcp_reorder_bytes.push(reorder_bytes);
                s.mptcp_send_buffer_bytes.push(conn.stats().send_buffer_bytes);
            }
        }
        for (i, l) in self.links.iter_mut().enumerate() {
            s.queue_t.push(t);
            s.queue_id.push(i as u32);
            s.queue_bytes.push(l.queued_bytes(self.now_ns));
            s.queue_packets.push(l.queued_packets(self.now_ns));
            s.queue_rate_bps.push(l.rate_bps());
        }
        for (k, m) in self.ue_metrics.iter_mut().enumerate() {
            let ue = UeId(k as u32);
            let telemetry = self.radio.ran.telemetry(self.now_ns, ue);
            let state = self.radio.ran.link_state(ue).expect("every scenario UE is attached");
            s.ue_t.push(t);
            s.ue_id.push(k as u32);
            s.ue_sinr_db.push(state.sinr_db);
            s.ue_rate_bps.push(telemetry.rate_bps);
            s.ue_los.push(state.los as u32);
            s.ue_rlc_bytes.push(telemetry.rlc_bytes);
            s.ue_ran_latency_ms.push(if m.window_deliveries == 0 {
                f64::NAN
            } else {
                m.window_latency_ns as f64 / m.window_deliveries as f64 / 1e6
            });
            s.ue_cell.push(self.radio.ran.cells_of(ue)[0].0);
            m.window_latency_ns = 0;
            m.window_deliveries = 0;
        }
        // The proxy table is the scenario's [proxy]'s: its rows are keyed by flow alone.
        if let Some(site) = self.middleboxes.first().filter(|_| self.scenario_proxy) {
            for (key, fs) in site.middlebox.samples(self.now_ns) {
                s.proxy_t.push(t);
                s.proxy_flow.push(key.server.port().wrapping_sub(SERVER_PORT) as u32);
                s.proxy_fw_bytes.push(fs.window_bytes);
                s.proxy_buffered_bytes.push(fs.buffered_bytes);
                s.proxy_in_flight_bytes.push(fs.in_flight_bytes);
                s.proxy_rtt_min_ms.push(fs.rtt_min_ns.map_or(f64::NAN, |ns| ns as f64 / 1e6));
            }
        }
        let next = self.now_ns + self.sample_step_ns;
        if next <= self.end_ns {
            self.events.schedule(next, Event::Sample);
        }
    }

    /// The rows sampled since the last chunk, in every table; `last` adds the goodput
    /// table (binned over the whole run, so complete only at the end).
    pub(super) fn take_chunk(&mut self, last: bool) -> Vec<Table> {
        let mut goodput = Goodput::default();
        let mut mobility = Mobility::default();
        if last {
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
            let bin_s = self.goodput_bin_ns as f64 / 1e9;
            for (i, f) in self.flows.iter().enumerate() {
                for (b, &bytes) in f.goodput_bins.iter().enumerate() {
                    goodput.t.push(b as f64 * bin_s);
                    goodput.flow.push(i as u32);
                    goodput.goodput_bps.push(bytes as f64 * 8.0 / bin_s);
                }
            }
        }
        let has = Has {
            ues: !self.radio.ue_nodes.is_empty(),
            proxy: self.scenario_proxy,
            mptcp: self.flows.iter().any(|f| f.spec.kind == FlowKind::Mptcp),
        };
        self.series.take_chunk(goodput, mobility, has)
    }
}
