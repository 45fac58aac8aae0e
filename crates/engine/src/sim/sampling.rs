//! The time series: the network's rows (queues, UEs) and the hosts' (flows, MP-TCP, the
//! proxy's flows) every sample step, handed out in chunks so memory stays flat (docs/outputs.md).

use millinet_network::series::FlowRow;

use super::*;

impl Engine {
    pub(super) fn sample(&mut self, network: &mut Network) {
        let t = self.now_ns as f64 / 1e9;
        let s = &mut self.series;
        for (i, f) in self.flows.iter_mut().enumerate() {
            let model = &self.endpoints[f.sender as usize].model;
            let mut k = 0;
            while let Some(tcp) = model.subflow(k) {
                s.push_flow_row(t, i as u32, k as u32, &FlowRow::from(&tcp.stats()));
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
        network.sample(self.now_ns, t, s);
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

    /// The rows sampled since the last chunk, in every table; `last` adds the goodput and
    /// mobility tables (complete only at the end).
    pub(super) fn take_chunk(&mut self, network: &Network, last: bool) -> Vec<Table> {
        let mut goodput = Goodput::default();
        let mobility = if last { network.mobility_rows() } else { Default::default() };
        if last {
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
            ues: network.ues() > 0,
            proxy: self.scenario_proxy,
            mptcp: self.flows.iter().any(|f| f.spec.kind == FlowKind::Mptcp),
            interference: network.has_interference(),
        };
        self.series.take_chunk(goodput, mobility, has)
    }
}
