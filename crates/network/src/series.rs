//! The time series sampled every `outputs.sample_step_s`, handed out in chunks while the
//! run proceeds: the engine's memory stays flat whatever the duration (issue 7).

use millinet_transport::TcpStats;

use crate::output::{Column, ColumnData, Table};

/// Rows (all tables together) held before they are handed out: under a MB.
pub const CHUNK_ROWS: usize = 16_384;

/// Columns of the tables sampled at every step, in output order.
#[derive(Default)]
pub struct Series {
    pub flow_t: Vec<f64>,
    pub flow_id: Vec<u32>,
    /// The subflow of an MP-TCP flow (0 for a TCP flow): one row per subflow.
    pub flow_subflow: Vec<u32>,
    pub cwnd_bytes: Vec<u64>,
    pub ssthresh_bytes: Vec<u64>,
    pub srtt_ms: Vec<f64>,
    pub pacing_rate_bps: Vec<f64>,
    pub in_flight_bytes: Vec<u64>,
    /// Stream bytes the (sub)flow's peer acknowledged so far: a path's contribution over
    /// time is its difference between samples.
    pub flow_acked_bytes: Vec<u64>,
    /// NaN before the first RTT sample.
    pub min_rtt_ms: Vec<f64>,
    pub delivery_rate_bps: Vec<f64>,
    /// Segments retransmitted so far.
    pub retransmits: Vec<u64>,
    pub queue_t: Vec<f64>,
    pub queue_id: Vec<u32>,
    pub queue_bytes: Vec<u64>,
    pub queue_packets: Vec<u64>,
    pub queue_rate_bps: Vec<u64>,
    pub ue_t: Vec<f64>,
    pub ue_id: Vec<u32>,
    pub ue_sinr_db: Vec<f64>,
    /// Signal over interference and interference over noise, where cells interfere.
    pub ue_sir_db: Vec<f64>,
    pub ue_inr_db: Vec<f64>,
    pub ue_rate_bps: Vec<f64>,
    pub ue_los: Vec<u32>,
    pub ue_rlc_bytes: Vec<u64>,
    pub ue_ran_latency_ms: Vec<f64>,
    /// The cell carrying the UE's bearer (scenario cell index).
    pub ue_cell: Vec<u32>,
    pub proxy_t: Vec<f64>,
    pub proxy_flow: Vec<u32>,
    pub proxy_fw_bytes: Vec<u64>,
    pub proxy_buffered_bytes: Vec<u64>,
    pub proxy_in_flight_bytes: Vec<u64>,
    pub proxy_rtt_min_ms: Vec<f64>,
    /// The data level of MP-TCP flows: the receiver's reassembly (reorder) buffer and the
    /// sender's send buffer (handed to subflows, not yet DATA_ACKed).
    pub mptcp_t: Vec<f64>,
    pub mptcp_flow: Vec<u32>,
    pub mptcp_reorder_bytes: Vec<u64>,
    pub mptcp_send_buffer_bytes: Vec<u64>,
}

/// The handovers and bearer switches of the run (filled once, at the end), one row each;
/// `kind` is 0 handover, 1 switch to the LTE anchor, 2 switch back (summary.json names them).
#[derive(Default)]
pub struct Mobility {
    pub t: Vec<f64>,
    pub ue: Vec<u32>,
    pub kind: Vec<u32>,
    pub from_cell: Vec<u32>,
    pub to_cell: Vec<u32>,
    pub interruption_s: Vec<f64>,
    pub sdus_forwarded: Vec<u64>,
    pub bytes_forwarded: Vec<u64>,
}

/// Which of the optional tables a run has.
#[derive(Clone, Copy)]
pub struct Has {
    /// UEs: the ues and mobility tables.
    pub ues: bool,
    /// The scenario's [proxy]: the proxy table.
    pub proxy: bool,
    /// MP-TCP flows: the mptcp table.
    pub mptcp: bool,
    /// Cells that interfere: the ues table's sir_db and inr_db columns.
    pub interference: bool,
}

/// The goodput table's columns (filled once, at the end of the run).
#[derive(Default)]
pub struct Goodput {
    pub t: Vec<f64>,
    pub flow: Vec<u32>,
    pub goodput_bps: Vec<f64>,
}

/// One row of the flows table: a sender's state, as the simulator's TCP or the kernel's
/// TCP_INFO reports it.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowRow {
    pub cwnd_bytes: u64,
    pub ssthresh_bytes: u64,
    pub srtt_ns: u64,
    pub pacing_rate_bps: u64,
    pub bytes_in_flight: u64,
    pub acked_bytes: u64,
    /// None before the first RTT sample.
    pub min_rtt_ns: Option<u64>,
    pub delivery_rate_bps: u64,
    pub retransmits: u64,
}

impl From<&TcpStats> for FlowRow {
    fn from(stats: &TcpStats) -> FlowRow {
        FlowRow {
            cwnd_bytes: stats.cwnd_bytes,
            ssthresh_bytes: stats.ssthresh_bytes,
            srtt_ns: stats.srtt_ns,
            pacing_rate_bps: stats.pacing_rate_bps,
            bytes_in_flight: stats.bytes_in_flight,
            acked_bytes: stats.acked_bytes,
            min_rtt_ns: (stats.rtt_samples > 0).then_some(stats.min_rtt_ns),
            delivery_rate_bps: stats.delivery_rate_bps,
            retransmits: stats.retransmitted_segments,
        }
    }
}

impl Series {
    /// One row of the flows table: flow `flow`'s (sub)flow `subflow` at `t`.
    pub fn push_flow_row(&mut self, t: f64, flow: u32, subflow: u32, row: &FlowRow) {
        self.flow_t.push(t);
        self.flow_id.push(flow);
        self.flow_subflow.push(subflow);
        self.cwnd_bytes.push(row.cwnd_bytes);
        self.ssthresh_bytes.push(row.ssthresh_bytes);
        self.srtt_ms.push(row.srtt_ns as f64 / 1e6);
        self.pacing_rate_bps.push(row.pacing_rate_bps as f64);
        self.in_flight_bytes.push(row.bytes_in_flight);
        self.flow_acked_bytes.push(row.acked_bytes);
        self.min_rtt_ms.push(row.min_rtt_ns.map_or(f64::NAN, |ns| ns as f64 / 1e6));
        self.delivery_rate_bps.push(row.delivery_rate_bps as f64);
        self.retransmits.push(row.retransmits);
    }

    pub fn rows(&self) -> usize {
        self.flow_t.len() + self.queue_t.len() + self.ue_t.len() + self.proxy_t.len() + self.mptcp_t.len()
    }

    /// The rows held so far as one chunk of every table, leaving the series empty. Each
    /// chunk has the same tables in the same order (flows, goodput, queues, then ues,
    /// proxy and mptcp when the run has them), empty ones included, so chunks concatenate.
    pub fn take_chunk(&mut self, goodput: Goodput, mobility: Mobility, has: Has) -> Vec<Table> {
        let s = std::mem::take(self);
        let col = |name, data| Column { name, data };
        let mut tables = vec![
            Table {
                name: "flows",
                columns: vec![
                    col("t", ColumnData::F64(s.flow_t)),
                    col("flow", ColumnData::U32(s.flow_id)),
                    col("subflow", ColumnData::U32(s.flow_subflow)),
                    col("cwnd_bytes", ColumnData::U64(s.cwnd_bytes)),
                    col("ssthresh_bytes", ColumnData::U64(s.ssthresh_bytes)),
                    col("srtt_ms", ColumnData::F64(s.srtt_ms)),
                    col("pacing_rate_bps", ColumnData::F64(s.pacing_rate_bps)),
                    col("bytes_in_flight", ColumnData::U64(s.in_flight_bytes)),
                    col("acked_bytes", ColumnData::U64(s.flow_acked_bytes)),
                    col("min_rtt_ms", ColumnData::F64(s.min_rtt_ms)),
                    col("delivery_rate_bps", ColumnData::F64(s.delivery_rate_bps)),
                    col("retransmits", ColumnData::U64(s.retransmits)),
                ],
            },
            Table {
                name: "goodput",
                columns: vec![
                    col("t", ColumnData::F64(goodput.t)),
                    col("flow", ColumnData::U32(goodput.flow)),
                    col("goodput_bps", ColumnData::F64(goodput.goodput_bps)),
                ],
            },
            Table {
                name: "queues",
                columns: vec![
                    col("t", ColumnData::F64(s.queue_t)),
                    col("queue", ColumnData::U32(s.queue_id)),
                    col("bytes", ColumnData::U64(s.queue_bytes)),
                    col("packets", ColumnData::U64(s.queue_packets)),
                    col("rate_bps", ColumnData::U64(s.queue_rate_bps)),
                ],
            },
        ];
        if has.ues {
            let mut columns =
                vec![col("t", ColumnData::F64(s.ue_t)), col("ue", ColumnData::U32(s.ue_id)), col("sinr_db", ColumnData::F64(s.ue_sinr_db))];
            if has.interference {
                columns.push(col("sir_db", ColumnData::F64(s.ue_sir_db)));
                columns.push(col("inr_db", ColumnData::F64(s.ue_inr_db)));
            }
            columns.extend([
                col("rate_bps", ColumnData::F64(s.ue_rate_bps)),
                col("los", ColumnData::U32(s.ue_los)),
                col("rlc_bytes", ColumnData::U64(s.ue_rlc_bytes)),
                col("ran_latency_ms", ColumnData::F64(s.ue_ran_latency_ms)),
                col("cell", ColumnData::U32(s.ue_cell)),
            ]);
            tables.push(Table { name: "ues", columns });
            tables.push(Table {
                name: "mobility",
                columns: vec![
                    col("t", ColumnData::F64(mobility.t)),
                    col("ue", ColumnData::U32(mobility.ue)),
                    col("kind", ColumnData::U32(mobility.kind)),
                    col("from_cell", ColumnData::U32(mobility.from_cell)),
                    col("to_cell", ColumnData::U32(mobility.to_cell)),
                    col("interruption_s", ColumnData::F64(mobility.interruption_s)),
                    col("sdus_forwarded", ColumnData::U64(mobility.sdus_forwarded)),
                    col("bytes_forwarded", ColumnData::U64(mobility.bytes_forwarded)),
                ],
            });
        }
        if has.proxy {
            tables.push(Table {
                name: "proxy",
                columns: vec![
                    col("t", ColumnData::F64(s.proxy_t)),
                    col("flow", ColumnData::U32(s.proxy_flow)),
                    col("fw_bytes", ColumnData::U64(s.proxy_fw_bytes)),
                    col("buffered_bytes", ColumnData::U64(s.proxy_buffered_bytes)),
                    col("in_flight_bytes", ColumnData::U64(s.proxy_in_flight_bytes)),
                    col("rtt_min_ms", ColumnData::F64(s.proxy_rtt_min_ms)),
                ],
            });
        }
        if has.mptcp {
            tables.push(Table {
                name: "mptcp",
                columns: vec![
                    col("t", ColumnData::F64(s.mptcp_t)),
                    col("flow", ColumnData::U32(s.mptcp_flow)),
                    col("reorder_bytes", ColumnData::U64(s.mptcp_reorder_bytes)),
                    col("send_buffer_bytes", ColumnData::U64(s.mptcp_send_buffer_bytes)),
                ],
            });
        }
        tables
    }
}
